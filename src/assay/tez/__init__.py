"""Tez bundles: read them, score TIP interrogation sessions, write eval-metrics records.

Entry points: :func:`assay.tez.bundle.open_bundle`, :func:`assay.tez.session.load_session`,
:func:`assay.tez.evaluate.score_session`, :mod:`assay.tez.writer`
(``plan_vendor``/``plan_tezit`` then ``apply``), and the ``assay tez`` commands in
:mod:`assay.cli.tez`. See docs/tez.md.
"""
