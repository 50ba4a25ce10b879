"""What a run's findings look like to their reader: the text and CI formats, the one output
dispatcher, the Markdown report of measured savings and each rule's page. It reads findings
and never the run."""
