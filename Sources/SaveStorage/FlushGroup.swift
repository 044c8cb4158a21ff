import CSaveToolSystem
import Foundation

/// Flushes shared by writers that finish at the same time (group commit): each writer waits
/// for one flush of the whole file system (Linux `syncfs`) that began after its writes, and one
/// such flush serves every writer waiting for it. A server storing many small objects at once
/// then pays one flush per batch rather than two per object.
///
/// Only where `syncfs` exists (Linux): elsewhere a flush of one descriptor covers nothing else,
/// so ``LocalFolderStorage`` flushes each file and folder itself.
public final class FlushGroup: @unchecked Sendable {
    private let condition = NSCondition()
    /// Flushes begun, and the last one finished (they run one at a time, in order).
    private var started = 0, finished = 0
    private var running = false
    /// The last flush that failed, and why.
    private var failed = (flush: 0, error: Int32(0))

    public init() {}

    /// Returns once the file system holding `descriptor` has been flushed by a flush that began
    /// after this call: 0, or the `errno` of that flush.
    public func flush(_ descriptor: Int32) -> Int32 {
        condition.lock()
        defer { condition.unlock() }
        let needed = started + 1
        while finished < needed {
            if running {
                condition.wait()
                continue
            }
            running = true
            started += 1
            let number = started
            condition.unlock()
            let result = savetool_sync_file_system(descriptor) == 0 ? 0 : errno
            condition.lock()
            running = false
            finished = number
            if result != 0 { failed = (number, result) }
            condition.broadcast()
        }
        // A failed flush at or after the one needed may have lost these writes.
        return failed.flush >= needed ? failed.error : 0
    }
}
