"""Monitoring: Prometheus scrape targets generated from the inventory (scrape), and the
validation's last verdicts as node_exporter textfile metrics (textfile)."""
