import Foundation
import SaveSync
import Testing

/// An entity tag names a version with or without the space around it that a header may carry.
@Suite("Sync: version tags")
struct VersionTagTests {
    @Test func tagsAreReadWithAndWithoutSpaceAround() {
        let cases: [(String, Int?)] = [
            ("\"3\"", 3), ("W/\"4\"", 4), (" \"5\" ", 5), ("\t\"6\"", 6), ("\u{A0}\"7\"\u{2003}", 7), ("  W/\"8\"", 8),
            ("\"\"", nil), ("3", nil), ("\"-1\"", nil), ("\"x\"", nil), ("\" 9\"", nil), ("", nil), (" ", nil), ("\"10", nil),
        ]
        for (tag, expected) in cases {
            #expect(VersionTag.version(in: tag) == expected, "\(tag.debugDescription)")
        }
    }
}
