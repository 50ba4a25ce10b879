"""A run: configuration, discovery, the pipeline and its filters, the runner with its worker
processes and cache, and what `--fix` does with the result. Front ends call it; it calls the
engine (`synclint.engine`) and never a front end or the report layer."""
