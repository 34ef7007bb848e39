"""The local container lab: the embedded default cluster that every job can run on."""
