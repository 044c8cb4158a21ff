import Foundation
import Testing

@testable import SaveKit

/// The path a kind's patterns are matched against is the one Foundation's URL standardises to,
/// whether it takes the byte scan's short way or URL's own.
@Suite("Paths the kinds' patterns match")
struct FileWalkTests {
    /// The rule the byte scan replaces: segments split out, none empty but a leading one, none
    /// `.` or `..`.
    static func standardBySplitting(_ path: String) -> Bool {
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        return !segments.dropFirst().contains { $0.isEmpty || $0 == "." || $0 == ".." } && segments.first != "." && segments.first != ".."
    }

    @Test func everyPathIsStandardisedAsURLStandardisesIt() {
        let segments = ["a", ".", "..", "", "...", "b.json", ".hidden", "x..", "..y", "Zoë"]
        var state: UInt64 = 0x51
        func pick(_ count: Int) -> Int {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Int(state >> 33) % count
        }
        var (standard, other) = (0, 0)
        for _ in 0..<4000 {
            let path = (pick(3) == 0 ? "/" : "") + (0...pick(4)).map { _ in segments[pick(segments.count)] }.joined(separator: "/")
            #expect(FileWalk.File.isStandard(path) == Self.standardBySplitting(path), "\(path)")
            if Self.standardBySplitting(path) { standard += 1 } else { other += 1 }
            guard !path.isEmpty else { continue }
            #expect(FileWalk.File.claimPath(of: path) == URL(fileURLWithPath: path).standardizedFileURL.path, "\(path)")
        }
        #expect(standard > 500 && other > 500, "\(standard) standard, \(other) not")
    }
}
