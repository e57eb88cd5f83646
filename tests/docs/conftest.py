"""The docs' server fixture (doc_server.py)."""

from doc_server import doc_server

__all__ = ["doc_server"]
