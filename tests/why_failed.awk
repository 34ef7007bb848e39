# Why a Molecule scenario failed, from its log (tests/run_all.sh prints this at the end of a failed
# run, since a CI page keeps only the tail). A scenario stops at its first failed step and then
# destroys its instances, so the cause is followed by a page of destroy output. This prints:
#   - each testinfra session that failed (the verifier step), whole;
#   - else the last Ansible task that failed, from its "TASK [" line (ansible-core's error report and
#     the "fatal: [host]" or "failed: [host] (item=...)" lines); earlier failed tasks were rescued or
#     ignored, as the refusal checks in check and side_effect steps are;
#   - then Molecule's own CRITICAL lines (the step and command that failed, the tasks that changed
#     on the idempotence run).
# Molecule wraps its output at 80 columns, so pytest's banners are split across lines: a session is
# found by its first and last banner lines ("test session starts", "N passed/failed ... in").

/test session starts/ { session = ""; in_session = 1 }
in_session { session = session $0 "\n" }
in_session && /=====.*[0-9]+ (passed|failed|errors?|skipped|deselected)/ {
    in_session = 0
    if (session ~ /[0-9]+ (failed|errors?)/) failed_sessions = failed_sessions session
}

/TASK \[|PLAY RECAP/ {
    if (task_failed) failed_task = task
    task = ""
    task_failed = 0
}
{ task = task $0 "\n" }
/(fatal|failed): \[/ && !/\.\.\.ignoring/ { task_failed = 1 }

# Molecule's CRITICAL lines and what one lists after it (the idempotence step's changed tasks); not
# the one every run prints about the absent default scenario.
/CRITICAL/ && !/glob failed/ { critical = critical $0 "\n"; listing = 1; next }
listing && /^ *\* / { critical = critical $0 "\n"; next }
{ listing = 0 }

END {
    # A session still open at the end is a verifier that crashed.
    if (in_session) failed_sessions = failed_sessions session
    if (task_failed) failed_task = task
    if (failed_sessions != "") printf "%s", failed_sessions
    else printf "%s", failed_task
    printf "%s", critical
}
