"""Every Redis key and channel name the server uses, in one place.

Keys that change together share a hash tag (the part in braces), so the layout also holds on a
Redis Cluster: everything about one table is tagged ``{t:<table>}``, everything about one player
``{p:<player>}``, one bearer token ``{tok:<digest>}``, one account ``{a:<name>}``. The lobby's
table index is a single key. Channels are not keys, but are prefixed the same way so two
deployments can share one Redis.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Keys:
    """Key names under one prefix (``settings.key_prefix``)."""

    prefix: str

    # Accounts and tokens
    def account(self, name_key: str) -> str:
        return f"{self.prefix}{{a:{name_key}}}:account"

    def token(self, digest: str) -> str:
        return f"{self.prefix}{{tok:{digest}}}:token"

    # Players
    def inbox(self, player: str) -> str:
        """List of undelivered rating events (JSON), oldest first."""
        return f"{self.prefix}{{p:{player}}}:inbox"

    def seat(self, player: str) -> str:
        """The table id where the player holds a seat (one at a time)."""
        return f"{self.prefix}{{p:{player}}}:seat"

    def presence(self, player: str) -> str:
        """Hash node id -> number of that player's sockets on the node."""
        return f"{self.prefix}{{p:{player}}}:presence"

    def addresses(self, player: str) -> str:
        """Zset network address (an IPv6 /64, as the same-address rule compares) -> the last
        time (Unix ms) a socket of the player came from it: the newest 50, kept 90 days
        after the last one (``python -m server.admin suspicious`` reads them)."""
        return f"{self.prefix}{{p:{player}}}:addresses"

    @property
    def addresses_pattern(self) -> str:
        """SCAN pattern of every player's :meth:`addresses` key."""
        return f"{self.prefix}{{p:*}}:addresses"

    def player_games(self, player: str, *, public: bool = False) -> str:
        """Sorted set of the player's finished game ids scored by when each finished (Unix
        s); ``public``: only the games anyone may see (not private)."""
        return f"{self.prefix}{{p:{player}}}:games{':public' if public else ''}"

    def player_game_rows(self, player: str) -> str:
        """Hash game id -> the player's history row of that game (JSON)."""
        return f"{self.prefix}{{p:{player}}}:game_rows"

    def player_muted(self, player: str) -> str:
        """Set of the player ids this player muted in chat (personal)."""
        return f"{self.prefix}{{p:{player}}}:muted"

    def chat_mute(self, player: str) -> str:
        """An operator's chat mute of the player: Unix seconds it ends (expires then)."""
        return f"{self.prefix}{{p:{player}}}:chat_mute"

    # Finished games
    def game_record(self, game_id: str) -> str:
        """A finished game's record (zlib-compressed msgpack), see server/store/games.py."""
        return f"{self.prefix}{{g:{game_id}}}:record"

    def game_served(self, game_id: str) -> str:
        """A finished game's record as served (a hash: its answer encoded once, its .mat,
        its review), see server/store/games.py; the form stored since records are served
        as bytes (``game_record`` is read for the games stored before)."""
        return f"{self.prefix}{{g:{game_id}}}:served"

    def records_budget(self, who: str) -> str:
        """Set of the game ids recorded for ``who`` (``p:<player>``, or ``n:<address>``: an
        IPv6 address's /64) in the budget's window: at most its budget, expiring an hour
        after its first game (``server/store/record_budget.py``)."""
        return f"{self.prefix}{{rb:{who}}}:recorded"

    # Tables
    def table_chat(self, table: str, game_no: int) -> str:
        """List of the chat messages (JSON) of the table's game ``game_no`` (before the
        first game: 1), oldest first; capped, kept as long as the game's record."""
        return f"{self.prefix}{{t:{table}}}:chat:{game_no}"

    # Chat reports for the operators (server/store/reports.py): every key tagged {reports},
    # changed together by report_add.lua and report_resolve.lua.
    @property
    def reports_open(self) -> str:
        """Sorted set of the open reports: member ``<table>/<msg>/<reporter>`` (one report
        per reporter and message), score the report's number (oldest first)."""
        return f"{self.prefix}{{reports}}:open"

    @property
    def reports_items(self) -> str:
        """Hash ``<table>/<msg>/<reporter>`` -> the open report (JSON)."""
        return f"{self.prefix}{{reports}}:items"

    @property
    def reports_stats(self) -> str:
        """Hash of the reports' counters: ``last`` (the last number given), ``refused``
        (reports refused because ``reports_kept`` were open)."""
        return f"{self.prefix}{{reports}}:stats"

    def reports_filed(self, player: str) -> str:
        """Counter of the chat reports the player filed in the current reports window
        (expires with the window)."""
        return f"{self.prefix}{{reports}}:filed:{player}"

    @property
    def chat_reports(self) -> str:
        """List of reported chat messages (JSON), the reports' layout of earlier versions:
        moved into the keys above by the first report script that finds it."""
        return f"{self.prefix}{{reports}}:chat"

    def table_lease(self, table: str) -> str:
        """Hash of the table's owner record: ``node``, ``epoch``, ``free``, ``done``, ``v``
        (see ``server/store/lua/lease_claim.lua``)."""
        return f"{self.prefix}{{t:{table}}}:lease"

    def table_events(self, table: str) -> str:
        """List of the table's events (msgpack maps), each with its version ``v``; capped."""
        return f"{self.prefix}{{t:{table}}}:events"

    def table_snapshot(self, table: str) -> str:
        """Latest full table state (a msgpack map), written by the write-behind flusher."""
        return f"{self.prefix}{{t:{table}}}:snapshot"

    def table_inboxed(self, table: str) -> str:
        """Set of the table's game ids whose rating events are in the players' inboxes."""
        return f"{self.prefix}{{t:{table}}}:inboxed"

    def table_results(self, table: str) -> str:
        """List of finished game results (JSON), written before the game-end broadcast."""
        return f"{self.prefix}{{t:{table}}}:results"

    @property
    def lobby(self) -> str:
        """Hash table id -> JSON summary of every listed (public, not finished) table."""
        return f"{self.prefix}{{lobby}}:tables"

    def lobby_index(self, mode: str | None = None) -> str:
        """Sorted set of the listed tables (of one mode), in list order (same hash tag as
        :attr:`lobby`, so one script keeps them together)."""
        suffix = "" if mode is None else f":{mode}"
        return f"{self.prefix}{{lobby}}:index{suffix}"

    # Login throttle (all under the account's tag, so one script updates them)
    def login_failures(self, player: str) -> str:
        """Hash: ``*`` -> failures of the account from anywhere; ``<address>`` -> failures
        from that address; ``lock:<address>`` -> unlock time."""
        return f"{self.prefix}{{a:{player}}}:login_failures"

    def login_known(self, player: str) -> str:
        """Set of the addresses (networks) this account logged in from successfully."""
        return f"{self.prefix}{{a:{player}}}:login_known"

    def account_tokens(self, player: str) -> str:
        """Set of the digests of the player's live tokens (ended on a password change or revoke)."""
        return f"{self.prefix}{{a:{player}}}:tokens"

    def node_tables(self, node: str) -> str:
        """Set of the tables ``node`` claimed or made and has not finished: where the takeover
        scan looks when the node dies (a hint, written at claim and end only; each table's
        owner record is the truth). Every node's set shares one hash tag."""
        return f"{self.prefix}{{leases}}:node:{node}"

    # Nodes
    @property
    def store_id(self) -> str:
        """String: the store's identity, a random id written (SET NX) by the first node that
        starts on it. Each node remembers it; a missing or different one means the store was
        emptied or replaced under the node (see ``Persistence.check_store``)."""
        return f"{self.prefix}store:id"

    @property
    def nodes(self) -> str:
        """Sorted set of node ids scored by when each stops counting as alive (ms, Redis
        clock): each node's one heartbeat (``node_heartbeat.lua``). How a node learns that a
        peer died: its tables are claimed, its tickets, seats and watchers cleaned up."""
        return f"{self.prefix}{{nodes}}:alive"

    @property
    def online(self) -> str:
        """Hash node id -> authenticated players connected there (written with the node's
        alive refresh; same hash tag as :attr:`nodes`, read together)."""
        return f"{self.prefix}{{nodes}}:online"

    @property
    def nodes_stopped(self) -> str:
        """Hash node id -> when it stopped (ms, Redis clock): the nodes of :attr:`nodes` that
        stopped cleanly with tables left for a peer (same hash tag, written together)."""
        return f"{self.prefix}{{nodes}}:stopped"

    @property
    def node_lag(self) -> str:
        """Hash node id -> its event loop's lag, ms (written with its heartbeat when it
        changed, by the node's pulse thread: ``server/cluster/pulse.py``)."""
        return f"{self.prefix}{{nodes}}:lag"

    def node_alive(self, node: str) -> str:
        return f"{self.prefix}node:{node}:alive"

    def node_channel(self, node: str) -> str:
        return f"{self.prefix}node:{node}"

    @property
    def broadcast_channel(self) -> str:
        """Every node listens here too (ended tokens)."""
        return f"{self.prefix}nodes"
