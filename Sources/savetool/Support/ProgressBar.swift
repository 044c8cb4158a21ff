import Foundation
import SaveArchive
import SaveToolCLI

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One line of progress on stderr where people wait (export, import, backup create, verify):
/// files and bytes so far, the rate, and the time left once the totals are known. Drawn only
/// when stderr is a terminal, never with `--json` or `-q`, at most ten times a second, and
/// erased when the work ends, so that what stays on the screen is the command's own output.
final class ProgressBar: @unchecked Sendable {
    private let label: String
    private let visible: Bool
    private let lock = NSLock()
    private let start = DispatchTime.now().uptimeNanoseconds
    private var lastDrawn: UInt64 = 0
    private var drawn = false

    init(_ label: String, global: GlobalOptions) {
        self.label = label
        visible = !global.quiet && !global.json && isatty(STDERR_FILENO) == 1
    }

    /// The callback for the engines.
    var update: @Sendable (WorkProgress) -> Void {
        { [self] progress in self.show(progress) }
    }

    /// The bar on the screen now, if any: a warning erases it first (the next update redraws it).
    nonisolated(unsafe) static var active: ProgressBar?

    private func show(_ progress: WorkProgress) {
        guard visible else { return }
        lock.withLock {
            let now = DispatchTime.now().uptimeNanoseconds
            guard lastDrawn == 0 || now >= lastDrawn &+ 100_000_000 else { return }
            Self.active = self
            lastDrawn = now
            drawn = true
            FileHandle.standardError.write(Data(("\r" + Self.line(label, progress, seconds: Double(now - start) / 1e9) + "\u{1B}[K").utf8))
        }
    }

    /// Erases the line.
    func finish() {
        lock.withLock {
            if drawn { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            drawn = false
            if Self.active === self { Self.active = nil }
        }
    }

    /// Erases the line so that a warning starts at the left margin; the next update draws it again.
    func erase() {
        lock.withLock {
            if drawn { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
            drawn = false
            lastDrawn = 0
        }
    }

    /// `exporting: 12,345 of 100,000 entries, 45.6 of 120.0 MB, 12.3 MB/s, 0:07 left`
    static func line(_ label: String, _ progress: WorkProgress, seconds: Double) -> String {
        var parts: [String] = []
        let phase = progress.phase == .checksumming ? "checksumming " : ""
        if let total = progress.totalEntries {
            parts.append("\(phase)\(count(progress.entries)) of \(count(total)) entries")
        } else {
            parts.append("\(phase)\(count(progress.entries)) entries")
        }
        if let total = progress.totalBytes {
            parts.append("\(megabytes(progress.bytes)) of \(megabytes(total)) MB")
        } else {
            parts.append("\(megabytes(progress.bytes)) MB")
        }
        if seconds > 0.5 { parts.append("\(megabytes(Int64(Double(progress.bytes) / seconds))) MB/s") }
        // The time left, from the bytes (or the entries, for a bundle of empty files).
        let fraction: Double? = progress.totalBytes.flatMap { $0 > 0 ? Double(progress.bytes) / Double($0) : nil }
            ?? progress.totalEntries.flatMap { $0 > 0 ? Double(progress.entries) / Double($0) : nil }
        if let fraction, fraction > 0.01, seconds > 1 {
            let left = Int((seconds / fraction - seconds).rounded())
            parts.append("\(left / 60):\(left % 60 < 10 ? "0" : "")\(left % 60) left")
        }
        return "\(label): " + parts.joined(separator: ", ")
    }

    private static func count(_ value: Int) -> String {
        let digits = String(value)
        var grouped = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { grouped += "," }
            grouped.append(digit)
        }
        return grouped
    }

    private static func megabytes(_ bytes: Int64) -> String {
        let tenths = Int((Double(bytes) / 1e5).rounded())
        return "\(tenths / 10).\(tenths % 10)"
    }
}
