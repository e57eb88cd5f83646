"""Computer players at three strengths, playing through the public protocol only.

Layers (imports point down)::

    server.bot.__main__   python -m server.bot: bot accounts playing games from the CLI
    server.bot.player     asyncio: one bot on one client connection (server.client)
    server.bot.strategy   pure: a decision per game snapshot and level (random/basic/strong)
    server.bot.evaluation pure: position scores, shots, winning chances

The server's "play the computer" (``server.lobby.computer``) runs ``server.bot.player`` bots that
connect to the node like any client.
"""
