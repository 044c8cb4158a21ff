import SaveKit

/// Where a save lives on a sync server: a space (one account of one app, `blocks/player-42`)
/// and a slot in it (the save's path, `Library/Preferences/com.example.blocks.plist`).
///
/// Names are checked before anything else happens, by the server before any storage is
/// touched and by the client before anything is sent: a space has 1–4 segments, a slot 1–16,
/// each of 1–128 characters from `A–Z a–z 0–9 . _ -`, never `.` or `..`; a space has no
/// segment `slots` and a slot does not end in `history` or `restore` (the API's paths use
/// them). So a name can never climb out of its place, hold a percent-encoded slash or a NUL,
/// or mean two things.
public struct SlotAddress: Sendable, Hashable, CustomStringConvertible {
    public let space: [String]
    public let slot: [String]

    public init(space: String, slot: String) throws(SaveError) {
        self.space = try Self.segments(of: space, what: "space", most: 4)
        self.slot = try Self.segments(of: slot, what: "slot", most: 16)
        // The API's paths end a slot with /history or /restore: a slot named so could not be read.
        if let last = self.slot.last, ["history", "restore"].contains(last) {
            throw SaveError(.usage, "the slot name \"\(Self.shown(slot))\" ends in \(last), which the API reserves; expected another last segment")
        }
    }

    public var spaceName: String { space.joined(separator: "/") }
    public var slotName: String { slot.joined(separator: "/") }
    public var description: String { spaceName + ":" + slotName }

    /// A space's name alone (listing its slots, checking a token's reach).
    public static func space(_ text: String) throws(SaveError) -> String {
        try segments(of: text, what: "space", most: 4).joined(separator: "/")
    }

    static func segments(of text: String, what: String, most: Int) throws(SaveError) -> [String] {
        // A space ends at its path's first `slots` segment.
        if what == "space", let index = text.split(separator: "/").firstIndex(of: "slots") {
            throw SaveError(.usage, location: "segment \(index + 1)", "the space name \"\(Self.shown(text))\" has a segment slots, which the API reserves")
        }
        let segments = text.split(separator: "/", omittingEmptySubsequences: false).map(String.init)
        guard (1...most).contains(segments.count) else {
            throw SaveError(.usage, "the \(what) name \"\(Self.shown(text))\" has \(segments.count) segments, expected 1 to \(most) separated by /")
        }
        for (index, segment) in segments.enumerated() {
            guard let problem = problem(with: segment) else { continue }
            throw SaveError(.usage, location: "segment \(index + 1)", "the \(what) name \"\(Self.shown(text))\": \(problem)")
        }
        return segments
    }

    /// Why a segment is not a name, or `nil`.
    static func problem(with segment: String) -> String? {
        let bytes = Array(segment.utf8)
        if bytes.isEmpty { return "an empty segment, expected 1 to 128 characters" }
        if bytes.count > 128 { return "a segment of \(bytes.count) bytes, expected at most 128" }
        if segment == "." || segment == ".." { return "the segment \"\(segment)\", expected a name (not . or ..)" }
        if let bad = segment.unicodeScalars.first(where: { !$0.isASCII || !isNameByte(UInt8($0.value)) }) {
            return "the character \(shownCharacter(bad)), expected only A-Z a-z 0-9 . _ -"
        }
        return nil
    }

    /// A byte a segment of a space's or a slot's name may hold.
    public static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default: false
        }
    }

    /// `"!"`, or `U+00E9` for what does not print as itself in a message.
    private static func shownCharacter(_ scalar: Unicode.Scalar) -> String {
        if (0x21..<0x7F).contains(scalar.value) { return "\"\(Character(scalar))\"" }
        let hex = String(scalar.value, radix: 16, uppercase: true)
        return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
    }

    /// A name as an error message shows it: printable, and not a screenful.
    static func shown(_ text: String) -> String {
        let printable = String(text.unicodeScalars.map { $0.value >= 0x20 && $0.value < 0x7F ? Character($0) : "?" })
        return printable.count > 80 ? String(printable.prefix(77)) + "..." : printable
    }
}
