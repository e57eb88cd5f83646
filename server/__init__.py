"""Table42 backgammon lobby and match server."""
