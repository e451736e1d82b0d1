"""An agent's loop with memory in it: `memtree hook EVENT`, one short process per event of a session.

The protocol (Claude Code's hook protocol; any agent may speak it): the event's JSON object arrives on
stdin — ``hook_event_name``, ``session_id``, ``transcript_path``, ``cwd`` and the event's own keys
(``prompt`` for UserPromptSubmit) — and what the hook adds to the model's context leaves on stdout as
``{"hookSpecificOutput": {"hookEventName": …, "additionalContext": …}}``, or nothing at all.

- ``protocol``: the event read from stdin, the answer written to stdout (pure);
- ``briefing``: SessionStart's few lines — open conflicts, newest decisions, preferences;
- ``respond``: what each event does against a MemTree (briefing, recall, capture);
- ``run``: the process edge — root, daemon, clock, and the rule that a hook never breaks a session.
"""
