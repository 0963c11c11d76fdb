"""The run store: runs, rows, baselines and where the project keeps them."""
