import FuzzSupport
import SaveKit

/// Built by scripts/fuzz (with -DFUZZING and -sanitize=fuzzer,address) this is a libFuzzer
/// target for the BinaryPlistCodec decoder; built plainly it replays the files it is given.
@main
struct FuzzBinaryPlist {
    static func main() {
        #if FUZZING
        FuzzCheck.fuzz { data, size in
            FuzzCheck.run(BinaryPlistCodec(), data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
            return 0
        }
        #else
        FuzzCheck.replay(BinaryPlistCodec())
        #endif
    }
}
