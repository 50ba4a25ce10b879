"""The front ends: the command line and its client, the daemon, the language server, the
flake8 plugin and `--watch`. Each parses its own options and hands the work to `synclint.run`."""
