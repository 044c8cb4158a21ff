import FuzzSupport
import SaveKit

/// Built by scripts/fuzz (with -DFUZZING and -sanitize=fuzzer,address) this is a libFuzzer
/// target for the XMLPlistCodec decoder; built plainly it replays the files it is given.
@main
struct FuzzXMLPlist {
    static func main() {
        #if FUZZING
        FuzzCheck.fuzz { data, size in
            FuzzCheck.run(XMLPlistCodec(), data.map { Array(UnsafeBufferPointer(start: $0, count: size)) } ?? [])
            return 0
        }
        #else
        FuzzCheck.replay(XMLPlistCodec())
        #endif
    }
}
