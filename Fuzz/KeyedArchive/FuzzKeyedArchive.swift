import FuzzSupport
import SaveKit

/// Built by scripts/fuzz (with -DFUZZING and -sanitize=fuzzer,address) this is a libFuzzer
/// target for keyed archives: a binary plist read as an archive's view and written back; built
/// plainly it replays the files it is given.
@main
struct FuzzKeyedArchive {
    static func main() {
        #if FUZZING
        FuzzCheck.fuzz { data, size in
            FuzzCheck.runKeyed(data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
            return 0
        }
        #else
        FuzzCheck.replayKeyed()
        #endif
    }
}
