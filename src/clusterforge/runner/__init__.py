"""Running playbooks through ansible-runner: playbook runs one, record follows its events, report
writes summary.json and JUnit XML, progress shows the run on a terminal or as plain lines."""
