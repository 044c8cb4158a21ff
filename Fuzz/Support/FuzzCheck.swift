import Foundation
import SaveKit

/// What every fuzz target checks of one input: decoding returns a value or throws a
/// `CodecError` (a crash, a hang or a sanitizer report is the finding), and a value that was
/// read survives writing and reading again in every codec that can hold it.
public enum FuzzCheck {
    /// Stops the process on a finding, so that libFuzzer saves the input.
    public static func run(_ codec: any SaveCodec, _ bytes: [UInt8]) {
        if let problem = problem(codec, bytes) { fatalError(problem) }
    }

    /// What is wrong with how `codec` handles `bytes`, or `nil`. The regression tests call this
    /// on every input the fuzzers ever found.
    public static func problem(_ codec: any SaveCodec, _ bytes: [UInt8]) -> String? {
        var options = DecodingOptions()
        options.maxExpandedValues = 1_000_000  // keep each run fast; the limit itself is what is tested
        let value: SaveValue
        do {
            value = try codec.decode(bytes, options: options)
        } catch is CodecError {
            // A reader that streams refuses what the tree reader refuses.
            if codec.events(in: bytes, options: options) != nil, streamedJSON(codec, bytes, options: options).failure == nil {
                return "\(codec.id) streamed what it refused to read"
            }
            return nil
        } catch {
            return "\(codec.id) threw something other than a CodecError: \(error)"
        }
        // A reader that streams gives the tree reader's document, as `convert` writes it.
        if codec.events(in: bytes, options: options) != nil {
            var written = ByteArrayOutput()
            switch streamedJSON(codec, bytes, options: options) {
            case .failure(let error): return "\(codec.id) refused to stream what it read: \(error)"
            case .success(let streamed):
                guard (try? Conversion.write(value, with: JSONCodec(), to: &written)) != nil, written.bytes == streamed else {
                    return "\(codec.id) streamed another document than it read"
                }
            }
        }
        for target in [JSONCodec(), BinaryPlistCodec(), XMLPlistCodec()] as [any SaveCodec] {
            var encoding = EncodingOptions()
            encoding.nullPolicy = .drop
            encoding.subsecondDatePolicy = .truncate
            var report = ValueLowering.Report()
            guard let written = try? target.encode(value, options: encoding, report: &report) else { continue }
            let back: SaveValue
            do {
                back = try target.decode(written)
            } catch {
                return "\(target.id) cannot read what it wrote: \(error)"
            }
            if report.isEmpty && back != value {
                return "\(codec.id) → \(target.id) → \(target.id) changed the value"
            }
        }
        return nil
    }

    /// `bytes` read by `codec` as events straight into the JSON writer.
    static func streamedJSON(_ codec: any SaveCodec, _ bytes: [UInt8], options: DecodingOptions) -> Result<[UInt8], any Error> {
        var output = ByteArrayOutput()
        return Result {
            try Conversion.convert(bytes, from: codec, to: JSONCodec(), decoding: options, to: &output)
            return output.bytes
        }
    }

    /// Stops the process on a finding in a keyed archive's view.
    public static func runKeyed(_ bytes: [UInt8]) {
        if let problem = keyedProblem(bytes) { fatalError(problem) }
    }

    /// What is wrong with how a keyed archive in `bytes` is read and written back, or `nil`:
    /// the view is read or refused (a `CodecError`, by type), the view streamed from the object
    /// table (as `convert` reads it) is the same JSON or the same refusal, an unchanged view
    /// writes back the very archive, and a new archive of the view reads as the same view.
    public static func keyedProblem(_ bytes: [UInt8]) -> String? {
        var options = DecodingOptions()
        options.maxExpandedValues = 1_000_000
        guard let plist = try? BinaryPlistCodec().decode(bytes, options: options), KeyedArchive.isKeyedArchive(plist) else { return nil }
        let streamed = streamedJSON(KeyedArchiveCodec(), bytes, options: options)
        let streamFailure = streamed.failure
        let archive: KeyedArchive
        let view: SaveValue
        do {
            archive = try KeyedArchive(plist)
            view = try archive.view()
        } catch {
            // A CodecError: the archive refused with its place (the only error these throw), as the stream refuses it.
            guard let streamFailure else { return "the tree refused what the stream read: \(error)" }
            return "\(streamFailure)" == "\(error)" ? nil : "the stream says \(streamFailure), the tree \(error)"
        }
        if let streamFailure { return "the stream refused what the tree read: \(streamFailure)" }
        do {
            var written = ByteArrayOutput()
            try Conversion.write(view, with: JSONCodec(), to: &written)
            guard written.bytes == (try? streamed.get()) else { return "the streamed view differs from the tree's" }
            guard try archive.archive(replacingViewWith: view) == plist else { return "an unchanged view wrote back another archive" }
            guard try KeyedArchive(try KeyedArchive.archive(view)).view() == view else { return "a new archive of the view reads as another view" }
        } catch {
            return nil  // a CodecError: the view cannot be written back, and says where
        }
        return nil
    }

    /// Without libFuzzer: runs each file named on the command line through ``keyedProblem(_:)``.
    public static func replayKeyed() {
        for path in CommandLine.arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                exit(66)
            }
            runKeyed(Array(data))
            print("\(path): ok")
        }
    }

    /// Without libFuzzer: runs each file named on the command line, to replay a crasher.
    public static func replay(_ codec: any SaveCodec) {
        for path in CommandLine.arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                FileHandle.standardError.write(Data("cannot read \(path)\n".utf8))
                exit(66)
            }
            run(codec, Array(data))
            print("\(path): ok")
        }
    }
}

#if FUZZING
/// libFuzzer's entry point for programs that keep their own `main` (SwiftPM renames an
/// executable's `main`, so libFuzzer's own cannot be used).
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<Int32>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32
) -> Int32

extension FuzzCheck {
    /// Hands control to libFuzzer, which calls `callback` with each input it generates.
    public static func fuzz(_ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> Int32) -> Never {
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv, callback))
    }
}
#endif

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let failure) = self { return failure }
        return nil
    }
}
