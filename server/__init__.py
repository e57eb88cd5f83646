"""Table42 backgammon lobby and match server."""

from server.builds import install

install()  # before any compiled module is imported: a stale extension is passed over
