"""The report: its content, its renderers (HTML and Markdown) and the figures."""
