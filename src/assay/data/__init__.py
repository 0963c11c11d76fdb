"""Documents assay reads and the rows it scores: datasets, outputs, streamed readers, the pass
rule."""
