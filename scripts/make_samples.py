#!/usr/bin/env python3
"""Writes the files under samples/: real-looking saves of several apps.

Run from the repository root: python3 scripts/make_samples.py
Deterministic: the same files every time, so a diff shows what changed.
"""
import datetime
import json
import plistlib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "samples"


def write(path, data):
    target = ROOT / path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def json_bytes(value, compact=False):
    if compact:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    return (json.dumps(value, ensure_ascii=False, indent=2) + "\n").encode()


# Kape: a party game's tournament in progress (Documents/current_tournament.json).
write("kape/Documents/current_tournament.json", json_bytes({
    "schemaVersion": 3,
    "players": [
        {"name": "Ana", "score": 3},
        {"name": "Besa", "score": 5},
        {"name": "Lojtari é", "score": 0},
        {"name": "Zoë 🎉", "score": 2},
    ],
    "round": 2,
    "totalRounds": 5,
    "activePlayerIndex": 1,
    "status": "playing",
    "deckId": "classic",
    "usedCardIds": [12, 7, 33, 2],
    "startedAt": "2026-11-20T19:42:10Z",
}))

# Older Kape tournaments, as versions 1 and 2 of the app wrote them (no version field).
write("kape/history/2024-v1/Documents/current_tournament.json", json_bytes({
    "players": ["Ana", "Besa", "Lojtari é", "Zoë 🎉"],
    "scores": {"Ana": 3, "Besa": 5, "Zoë 🎉": 1},
    "roundIndex": 2, "currentPlayerIndex": 1, "deckId": "classic",
}))
write("kape/history/2024-v1-empty/Documents/current_tournament.json", json_bytes({
    "players": [], "scores": {}, "roundIndex": 0, "currentPlayerIndex": 0, "deckId": "party",
}))
write("kape/history/2025-v2/Documents/current_tournament.json", json_bytes({
    "players": [{"name": "Ana", "score": 7}, {"name": "Drita", "score": 4}],
    "roundIndex": 5, "currentPlayerIndex": 0, "deckId": "spicy",
}))
write("kape/history/2024-v1-finished/Documents/current_tournament.json", json_bytes({
    "players": ["Érion", "Mërgim", "Ola 🌶️"], "scores": {"Érion": 9, "Ola 🌶️": 11},
    "roundIndex": 8, "totalRounds": 8, "currentPlayerIndex": 2, "deckId": "spicy",
}))
# Version 2 files, with and without the schemaVersion field (early 2.x builds did not write it).
write("kape/history/2025-v2-finished/Documents/current_tournament.json", json_bytes({
    "schemaVersion": 2, "players": [{"name": "Blerta", "score": 12}, {"name": "José", "score": 12}, {"name": "Ngozi", "score": 3}],
    "roundIndex": 10, "totalRounds": 10, "currentPlayerIndex": 0, "deckId": "classic",
}))
write("kape/history/2025-v2-solo/Documents/current_tournament.json", json_bytes({
    "schemaVersion": 2, "players": [{"name": "Zoë 🎉", "score": 0}], "roundIndex": 0, "totalRounds": 3,
    "currentPlayerIndex": 0, "deckId": "classic",
}))
write("kape/history/2026-v3-finished/Documents/current_tournament.json", json_bytes({
    "schemaVersion": 3, "players": [{"name": "Ana", "score": 14}, {"name": "Lojtari é", "score": 9}], "round": 6, "totalRounds": 6,
    "activePlayerIndex": 1, "status": "finished", "deckId": "after-dark", "usedCardIds": [],
}))

# Sudoku: saved games, in progress and completed, as versions 1 and 2 of the app wrote them.
BOARD = "530070000600195000098000060800060003400803001700020006060000280000419005000080079"
for name, game in {
    "v1-in-progress": {"puzzleId": "daily-2024-03-14", "board": BOARD, "notes": {"2": [1, 2, 4], "10": [7]}, "seconds": 312, "completed": False},
    "v1-completed": {"puzzleId": "classic-117", "board": BOARD.replace("0", "9"), "notes": {}, "seconds": 1804, "completed": True,
                     "completedAt": 731_842_335.5},
    "v1-fresh": {"puzzleId": "ëndrra-7", "title": "Ëndrra 🌙", "board": BOARD, "notes": {}, "seconds": 0, "completed": False},
}.items():
    write(f"sudoku/Documents/games/{name}.json", json_bytes(game))
for name, game in {
    "v2-in-progress": {"version": 2, "puzzleId": "daily-2026-11-20", "board": BOARD, "pencilMarks": {"40": [3, 9]},
                       "timer": {"elapsedSeconds": 95, "paused": False}, "completed": False},
    "v2-completed": {"version": 2, "puzzleId": "expert-3", "board": BOARD.replace("0", "8"), "pencilMarks": {},
                     "timer": {"elapsedSeconds": 2210, "paused": True}, "completed": True, "completedAt": "2026-11-19T21:04:11Z"},
    "v2-paused": {"version": 2, "puzzleId": "daily-2026-11-21", "title": "Çaj i mëngjesit ☕", "board": BOARD,
                  "pencilMarks": {"0": [1], "80": [2, 4, 6, 8]}, "timer": {"elapsedSeconds": 4021, "paused": True}, "completed": False},
}.items():
    write(f"sudoku/Documents/games/{name}.json", json_bytes(game))

# Blocks: a puzzle game's UserDefaults (Library/Preferences/<bundle id>.plist, binary),
# whose gameSave key holds the JSON bytes of a GameSaveData written by JSONEncoder.
game_save = {
    "playerLevel": 14,
    "currentXP": 2380,
    "coinBalance": 1275,
    "unlockedThemes": ["classic", "neon", "forest"],
    "levelProgress": {
        "1": {"stars": 3, "bestScore": 1820, "completed": True},
        "2": {"stars": 2, "bestScore": 1410, "completed": True},
        "3": {"stars": 0, "bestScore": 0, "completed": False},
    },
    "achievements": ["first_clear", "combo_5", "no_hints"],
    "statistics": {"gamesPlayed": 87, "linesCleared": 1204, "bestCombo": 7, "totalPlayTime": 41234.5},
    "settings": {"soundEnabled": True, "hapticsEnabled": False, "theme": "neon"},
    "lastSaved": 785_923_200.25,
    "lastPlayed": 785_919_600.0,
}
write("blocks/Library/Preferences/com.example.blocks.plist", plistlib.dumps({
    "gameSave": json_bytes(game_save, compact=True),
    "hasSeenTutorial": True,
    "musicVolume": 0.65,
    "launchCount": 212,
    "installDate": datetime.datetime(2025, 3, 14, 9, 26, 53),
    "lastReviewPrompt": datetime.datetime(2026, 10, 2, 18, 4, 11, 500000),
    "deviceToken": bytes.fromhex("8f3a9c1e77d2b04519aa6c0e3d5f7b21"),
    "AppleLanguages": ["sq-AL", "en-US"],
}, fmt=plistlib.FMT_BINARY, sort_keys=False))

# Two more players of version 1: one who just installed, one who has unlocked everything.
def blocks_defaults(save, **other):
    return plistlib.dumps({"gameSave": json_bytes(save, compact=True), **other}, fmt=plistlib.FMT_BINARY, sort_keys=False)


write("blocks/history/v1-new-player/Library/Preferences/com.example.blocks.plist", blocks_defaults({
    "playerLevel": 1, "currentXP": 0, "coinBalance": 50, "unlockedThemes": ["classic"], "levelProgress": {},
    "achievements": [], "statistics": {"gamesPlayed": 0, "linesCleared": 0, "bestCombo": 0, "totalPlayTime": 0.0},
    "settings": {"soundEnabled": True, "hapticsEnabled": True, "theme": "classic"},
    "lastSaved": 757_382_400.0, "lastPlayed": 757_382_400.0,
}, hasSeenTutorial=False, launchCount=1, installDate=datetime.datetime(2025, 1, 1, 12, 0, 0)))
write("blocks/history/v1-completionist/Library/Preferences/com.example.blocks.plist", blocks_defaults({
    "playerLevel": 99, "currentXP": 1_250_000, "coinBalance": 987_654,
    "unlockedThemes": ["classic", "neon", "forest", "ocean", "desert", "🎃 Halloween", "Noël"],
    "levelProgress": {str(level): {"stars": 3, "bestScore": 2000 + 37 * level, "completed": True} for level in range(1, 41)},
    "achievements": ["first_clear", "combo_5", "combo_10", "no_hints", "all_stars", "night_owl"],
    "statistics": {"gamesPlayed": 5120, "linesCleared": 203_118, "bestCombo": 19, "totalPlayTime": 1_802_245.75},
    "settings": {"soundEnabled": False, "hapticsEnabled": False, "theme": "🎃 Halloween"},
    "lastSaved": 783_302_400.5, "lastPlayed": 783_298_800.0,
}, hasSeenTutorial=True, launchCount=4410, musicVolume=0.0, AppleLanguages=["fr-FR", "sq-AL"]))

# The same game a year later: GameSaveData version 2 (player grouped, ISO dates).
game_save_v2 = {
    "saveVersion": 2, "player": {"level": 31, "xp": 90410}, "coins": 40, "unlockedThemes": ["classic", "neon", "ocean", "desert"],
    "levelProgress": {"1": {"stars": 3, "bestScore": 2210, "completed": True}}, "achievements": ["first_clear", "combo_10"],
    "statistics": {"gamesPlayed": 412, "linesCleared": 9120, "bestCombo": 12, "totalPlayTime": 301882.0},
    "settings": {"soundEnabled": False, "hapticsEnabled": True, "theme": "ocean"},
    "lastSaved": "2026-11-20T22:41:07Z", "lastPlayed": "2026-11-20T22:10:00Z",
}
write("blocks-2026/Library/Preferences/com.example.blocks.plist", plistlib.dumps({
    "gameSave": json_bytes(game_save_v2, compact=True), "hasSeenTutorial": True, "musicVolume": 0.2, "launchCount": 1093,
    "installDate": datetime.datetime(2025, 3, 14, 9, 26, 53), "AppleLanguages": ["de-DE"],
}, fmt=plistlib.FMT_BINARY, sort_keys=False))
write("blocks-2026/history/v2-lapsed/Library/Preferences/com.example.blocks.plist", blocks_defaults({
    "saveVersion": 2, "player": {"level": 4, "xp": 610}, "coins": 0, "unlockedThemes": ["classic"],
    "levelProgress": {"1": {"stars": 1, "bestScore": 300, "completed": True}, "2": {"stars": 0, "bestScore": 120, "completed": False}},
    "achievements": [], "statistics": {"gamesPlayed": 9, "linesCleared": 41, "bestCombo": 2, "totalPlayTime": 2311.5},
    "settings": {"soundEnabled": True, "hapticsEnabled": True, "theme": "classic"},
    "lastSaved": "2026-02-11T07:03:44Z", "lastPlayed": "2026-02-11T06:58:00Z",
}, hasSeenTutorial=True, launchCount=12))

# Kingdom: a location game's player in UserDefaults (separate keys), with its
# kingdoms_local_state JSON held in a data value. Version 1 of the app kept cooldowns as Unix
# seconds and reputation as bare numbers; version 2 (defaults_version 2) keeps cooldowns as dates
# and each reputation with its standing. The state went from version 1 (building levels keyed by
# building, treasury a number, Unix seconds) to version 2 (stateVersion 2, buildings a list,
# ISO 8601 strings).
def unix(*parts):
    return datetime.datetime(*parts, tzinfo=datetime.timezone.utc).timestamp()


def kingdom_defaults(player, state, version):
    reputation = player["reputation"]
    cooldowns = player["cooldowns"]
    if version == 2:
        reputation = {name: {"score": score, "standing": "hostile" if score < 0 else "honored" if score >= 50 else "neutral"}
                      for name, score in reputation.items()}
        cooldowns = {action: datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).replace(tzinfo=None)
                     for action, seconds in cooldowns.items()}
    defaults = {"defaults_version": 2} if version == 2 else {}
    defaults.update({
        "player_id": player["id"], "player_name": player["name"], "gold": player["gold"], "level": player["level"],
        "xp": player["xp"], "reputation": reputation, "cooldowns": cooldowns,
    })
    if state is not None:
        defaults["kingdoms_local_state"] = json_bytes(state, compact=True)
    defaults.update(player.get("other", {}))
    return defaults


def kingdom_state(kingdoms, saved_at, version):
    if version == 1:
        return {"kingdoms": kingdoms, "savedAt": saved_at}
    iso = lambda seconds: datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"stateVersion": 2, "kingdoms": {
        name: {**kingdom,
               "buildings": [{"type": building, "level": level} for building, level in kingdom["buildings"].items()],
               "treasury": {"gold": kingdom["treasury"]},
               "contracts": [{**contract, "until": iso(contract["until"])} for contract in kingdom["contracts"]]}
        for name, kingdom in kingdoms.items()}, "savedAt": iso(saved_at)}


DRITA = {"id": "6F9619FF-8B86-D011-B42D-00C04FC964FF", "name": "Drita", "gold": 3120, "level": 9, "xp": 18250,
         "reputation": {"Arbëria": 42, "Dardania": -5, "Ilyria": 0, "Epiri": 77},
         "cooldowns": {"raid": unix(2026, 11, 21, 7, 30), "trade": unix(2026, 11, 20, 22, 15)},
         "other": {"hasSeenOnboarding": True, "mapZoom": 14.5}}
DRITA_KINGDOMS = {
    "Arbëria": {"ruler": "Gjergj", "buildings": {"castle": 3, "farm": 5, "market": 2}, "treasury": 1450,
                "contracts": [{"with": "Dardania", "goods": "grain", "until": unix(2026, 12, 1)}]},
    "Dardania": {"ruler": "Teuta", "buildings": {"castle": 2, "mine": 4}, "treasury": 980, "contracts": []},
}
NEW_PLAYER = {"id": "0B1E6A2C-3D4F-4A5B-8C6D-7E8F9A0B1C2D", "name": "Ilir", "gold": 100, "level": 1, "xp": 0,
              "reputation": {}, "cooldowns": {}}
ZOE = {"id": "F1E2D3C4-B5A6-4978-8695-A4B3C2D1E0F9", "name": "Zoë 🏰", "gold": 0, "level": 23, "xp": 120400,
       "reputation": {"Ilyria": 100, "Dardania": -100, "Çamëria": 50, "Mokra": -1},
       "cooldowns": {"raid": unix(2025, 6, 2, 18, 0, 30), "heal": unix(2025, 6, 2, 17, 45)}}

samples = {
    # Current (version 2) defaults and state.
    "kingdom": (DRITA, kingdom_state(DRITA_KINGDOMS, unix(2026, 11, 20, 21, 5, 12), 2), 2),
    # Written by version 1 of the app.
    "kingdom/history/2025-drita-v1": (DRITA, kingdom_state(DRITA_KINGDOMS, unix(2025, 9, 3, 12, 0), 1), 1),
    "kingdom/history/2025-new-player-v1": (NEW_PLAYER, kingdom_state({"Mokra": {"ruler": "Ilir", "buildings": {}, "treasury": 0, "contracts": []}},
                                                                     unix(2025, 1, 7, 8, 30), 1), 1),
    "kingdom/history/2025-zoe-v1": (ZOE, None, 1),
    # The defaults already at version 2 while the state is still at version 1: each migrates on its own.
    "kingdom/history/2026-zoe-v2-state-v1": (ZOE, kingdom_state({
        "Ilyria": {"ruler": "Zoë 🏰", "buildings": {"castle": 5, "temple": 1}, "treasury": 22000,
                   "contracts": [{"with": "Çamëria", "goods": "salt", "until": unix(2026, 2, 28, 23, 59, 59)},
                                 {"with": "Mokra", "goods": "iron", "until": unix(2026, 3, 1)}]}},
        unix(2026, 1, 15, 6, 0), 1), 2),
}
for folder, (player, state, version) in samples.items():
    write(f"{folder}/Library/Preferences/com.example.kingdoms.plist",
          plistlib.dumps(kingdom_defaults(player, state, version), fmt=plistlib.FMT_BINARY, sort_keys=False))

# The current defaults as XML, as Xcode shows them.
write("kingdom/Library/Preferences/com.example.kingdoms.xml.plist",
      plistlib.dumps(plistlib.loads((ROOT / "kingdom/Library/Preferences/com.example.kingdoms.plist").read_bytes()),
                     fmt=plistlib.FMT_XML, sort_keys=False))
print("samples written under", ROOT)
