"""Read models for the workbench pages, one module per page (ask, trace, rules, sessions) plus
what several share (highlight, outputs, rules_yaml).

The pages only draw what these functions return, so everything a reviewer sees (which
gatekeeper error belongs to which claim, where an excerpt sits in its output, what the review
queue's charts count) is also reachable from the library and tested without a browser.
Nothing here produces HTML: highlight windows are plain (text, kind) segments and the UI
escapes them.
"""
