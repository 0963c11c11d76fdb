"""A small RAG application instrumented with the real OpenTelemetry SDK.

Each request makes a root span, a retrieval span (OpenInference ``retrieval.documents``), a chat
span (GenAI ``gen_ai.input.messages`` / ``gen_ai.output.messages`` and usage) and a tool span
(``execute_tool``), and the SDK's OTLP/HTTP exporter sends them wherever it is pointed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

DOCUMENTS = [
    ("kb-1", "The Larkspur Basic plan includes ten gigabytes of mobile data every month."),
    ("kb-2", "Roaming in the European Union is included in every Larkspur plan at no extra cost."),
    (
        "kb-3",
        "Invoices are issued on the first day of each month and are due within fourteen days.",
    ),
    ("kb-4", "A replacement SIM card is posted within three working days of the request."),
]
QUESTIONS = [
    ("How much mobile data does the Basic plan include?", 0),
    ("Is roaming in the European Union included in my plan?", 1),
    ("When are invoices issued and when are they due?", 2),
    ("How quickly is a replacement SIM card posted?", 3),
]
OFF_TOPIC = "The Vienna office closes at noon on Tuesdays and visitor parking is free."


@dataclass
class App:
    """The instrumented application; ``drifted`` answers stop citing the retrieved contexts."""

    provider: TracerProvider
    drifted: bool = False

    @classmethod
    def exporting_to(cls, endpoint: str, headers: dict[str, str] | None = None) -> App:
        provider = TracerProvider(resource=Resource.create({"service.name": "larkspur-rag"}))
        exporter = OTLPSpanExporter(endpoint=endpoint, headers=headers, timeout=10)
        provider.add_span_processor(BatchSpanProcessor(exporter, max_export_batch_size=64))
        return cls(provider)

    def answer(self, number: int, extra: str = "", session: str | None = None) -> str:
        tracer = self.provider.get_tracer("rag_app")
        question, doc = QUESTIONS[number % len(QUESTIONS)]
        question = f"{question}{extra}"
        doc_id, text = DOCUMENTS[doc]
        with tracer.start_as_current_span("rag.request") as root:
            root.set_attribute("session.id", session or f"session-{number}")
            with tracer.start_as_current_span("retrieve") as retrieval:
                retrieval.set_attribute("openinference.span.kind", "RETRIEVER")
                retrieval.set_attribute("retrieval.documents.0.document.id", doc_id)
                retrieval.set_attribute("retrieval.documents.0.document.content", text)
            answer = OFF_TOPIC if self.drifted else text
            with tracer.start_as_current_span("chat larkspur-model") as chat:
                chat.set_attribute("gen_ai.operation.name", "chat")
                chat.set_attribute("gen_ai.request.model", "larkspur-model")
                messages = [
                    {"role": "system", "parts": [{"type": "text", "content": f"Context: {text}"}]},
                    {"role": "user", "parts": [{"type": "text", "content": question}]},
                ]
                chat.set_attribute("gen_ai.input.messages", json.dumps(messages))
                reply = [{"role": "assistant", "parts": [{"type": "text", "content": answer}]}]
                chat.set_attribute("gen_ai.output.messages", json.dumps(reply))
                chat.set_attribute("gen_ai.usage.input_tokens", 40 + number % 7)
                chat.set_attribute("gen_ai.usage.output_tokens", 12)
            with tracer.start_as_current_span("execute_tool lookup_account") as tool:
                tool.set_attribute("gen_ai.operation.name", "execute_tool")
                tool.set_attribute("gen_ai.tool.name", "lookup_account")
                tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"query": question}))
        return answer

    def close(self) -> None:
        self.provider.force_flush()
        self.provider.shutdown()


def main() -> None:
    """Send traces of N requests to an OTLP/HTTP endpoint; the last ones drifted."""
    import argparse

    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--endpoint", default="http://127.0.0.1:4318/v1/traces")
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--drift-after", type=int, default=60)
    parser.add_argument("--token", default=None, help="bearer token the collector expects")
    options = parser.parse_args()
    headers = {"Authorization": f"Bearer {options.token}"} if options.token else None
    app = App.exporting_to(options.endpoint, headers)
    for number in range(options.requests):
        app.drifted = number >= options.drift_after
        extra = " My email is jane.roe@example.org, key sk-proj-Zx81QwErTy12UiOp34AsDf56GhJk78Lm."
        app.answer(number, extra if number == 3 else "")
    app.close()
    print(f"sent {options.requests} requests ({options.requests - options.drift_after} drifted)")


if __name__ == "__main__":
    main()
