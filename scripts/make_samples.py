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

# Sudoku: saved games, in progress and completed, as versions 1 and 2 of the app wrote them.
BOARD = "530070000600195000098000060800060003400803001700020006060000280000419005000080079"
for name, game in {
    "v1-in-progress": {"puzzleId": "daily-2024-03-14", "board": BOARD, "notes": {"2": [1, 2, 4], "10": [7]}, "seconds": 312, "completed": False},
    "v1-completed": {"puzzleId": "classic-117", "board": BOARD.replace("0", "9"), "notes": {}, "seconds": 1804, "completed": True,
                     "completedAt": 731_842_335.5},
}.items():
    write(f"sudoku/Documents/games/{name}.json", json_bytes(game))
for name, game in {
    "v2-in-progress": {"version": 2, "puzzleId": "daily-2026-11-20", "board": BOARD, "pencilMarks": {"40": [3, 9]},
                       "timer": {"elapsedSeconds": 95, "paused": False}, "completed": False},
    "v2-completed": {"version": 2, "puzzleId": "expert-3", "board": BOARD.replace("0", "8"), "pencilMarks": {},
                     "timer": {"elapsedSeconds": 2210, "paused": True}, "completed": True, "completedAt": "2026-11-19T21:04:11Z"},
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

# Kingdom: a location game's player in UserDefaults, with its kingdoms_local_state JSON
# held in a data value.
kingdoms = {
    "Arbëria": {"ruler": "Gjergj", "buildings": {"castle": 3, "farm": 5, "market": 2}, "treasury": 1450,
                "contracts": [{"with": "Dardania", "goods": "grain", "until": "2026-12-01T00:00:00Z"}]},
    "Dardania": {"ruler": "Teuta", "buildings": {"castle": 2, "mine": 4}, "treasury": 980, "contracts": []},
}
write("kingdom/Library/Preferences/com.example.kingdoms.plist", plistlib.dumps({
    "player_id": "6F9619FF-8B86-D011-B42D-00C04FC964FF",
    "player_name": "Drita",
    "gold": 3120,
    "level": 9,
    "xp": 18250,
    "reputation": {"Arbëria": 42, "Dardania": -5, "Ilyria": 0},
    "cooldowns": {
        "raid": datetime.datetime(2026, 11, 21, 7, 30, 0),
        "trade": datetime.datetime(2026, 11, 20, 22, 15, 0),
    },
    "kingdoms_local_state": json_bytes(kingdoms, compact=True),
}, fmt=plistlib.FMT_BINARY, sort_keys=False))

# The same kingdom defaults as XML, as Xcode shows them.
write("kingdom/Library/Preferences/com.example.kingdoms.xml.plist",
      plistlib.dumps(plistlib.loads((ROOT / "kingdom/Library/Preferences/com.example.kingdoms.plist").read_bytes()),
                     fmt=plistlib.FMT_XML, sort_keys=False))
print("samples written under", ROOT)
