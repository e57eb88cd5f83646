"""The I/O shell's network side: WebSocket and HTTP handlers, the socket hub, middleware and the
browser client's files.
"""
