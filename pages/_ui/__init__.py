"""What every workbench page shares, one module per concern: navigation and the frame (frame),
the page language and its words from the catalogue (i18n), settings and cached store reads (reads),
escaping and markup (markup), badges and links (widgets), who is reviewing or editing (identity),
and the server's routes for deep links (deep_links).

The package name starts with "_" so Streamlit never takes it for a page. Everything drawn from a
tool output or an LLM answer passes through markup.esc / markup.segments_html before it becomes
markup: a log line is data.
"""
