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
            return nil
        } catch {
            return "\(codec.id) threw something other than a CodecError: \(error)"
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

    /// Stops the process on a finding in a keyed archive's view.
    public static func runKeyed(_ bytes: [UInt8]) {
        if let problem = keyedProblem(bytes) { fatalError(problem) }
    }

    /// What is wrong with how a keyed archive in `bytes` is read and written back, or `nil`:
    /// the view is read or refused (a `CodecError`, by type), an unchanged view writes back the very
    /// archive, and a new archive of the view reads as the same view.
    public static func keyedProblem(_ bytes: [UInt8]) -> String? {
        var options = DecodingOptions()
        options.maxExpandedValues = 1_000_000
        guard let plist = try? BinaryPlistCodec().decode(bytes, options: options), KeyedArchive.isKeyedArchive(plist) else { return nil }
        do {
            let archive = try KeyedArchive(plist)
            let view = try archive.view()
            guard try archive.archive(replacingViewWith: view) == plist else { return "an unchanged view wrote back another archive" }
            guard try KeyedArchive(try KeyedArchive.archive(view)).view() == view else { return "a new archive of the view reads as another view" }
        } catch {
            return nil  // a CodecError: the archive refused with its place (the only error these throw)
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
