import Foundation
import TestSupport
import Testing

/// Archives made to hurt: each gets a clean error or a correct read, within 2 seconds and
/// 200 MB, with no program started and nothing written.
@Suite("hostile and foreign archives")
struct HostileArchiveTests {
    /// Writes the hostile archives into `directory` and returns their names.
    static func makeArchives(in directory: URL) throws -> [String] {
        let script = #"""
            import gzip, io, os, sys, tarfile, zipfile, zlib
            os.chdir(sys.argv[1])
            def tar_bytes(name=b"save.json", data=b'{"a": 1}\n'):
                buffer = io.BytesIO()
                with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as tar:
                    info = tarfile.TarInfo(name.decode()); info.size = len(data)
                    tar.addfile(info, io.BytesIO(data))
                return buffer.getvalue()
            nested = tar_bytes()
            for _ in range(30): nested = gzip.compress(nested, mtime=0)
            open("nested30.tar.gz", "wb").write(nested)
            # A tar.gz whose one file is 1 GiB of zeros.
            with open("bomb.tar.gz", "wb") as out:
                compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
                header = tarfile.TarInfo("zeros"); header.size = 1 << 30
                out.write(compressor.compress(header.tobuf(tarfile.PAX_FORMAT)))
                block = bytes(1 << 20)
                for _ in range(1024): out.write(compressor.compress(block))
                out.write(compressor.compress(bytes(1024)) + compressor.flush())
            # A zip whose one entry inflates to 1 GiB.
            with zipfile.ZipFile("bomb.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
                with archive.open("zeros", "w", force_zip64=True) as entry:
                    block = bytes(1 << 20)
                    for _ in range(1024): entry.write(block)
            # Compressions only an external program reads: the magic bytes, then noise.
            open("save.tar.lzo", "wb").write(b"\x89LZO\x00\r\n\x1a\n" + os.urandom(200))
            open("save.tar.lrz", "wb").write(b"LRZI\x00\x06" + os.urandom(200))
            open("save.tar.grz", "wb").write(b"GRZipII\x00\x02\x04:)" + os.urandom(200))
            """#
        let result = try Processes.run(["python3", "-c", script, directory.path])
        #expect(result.status == 0, "\(result.errors)")
        // A gzip whose content is itself: libarchive's bidding would stack gzip on gzip without end.
        let quine = Corpus.packageRoot.appendingPathComponent("Tests/savetoolTests/Fixtures/gzip_quine.py").path
        let made = try Processes.run(["python3", quine, directory.appendingPathComponent("quine.tar.gz").path])
        #expect(made.status == 0, "\(made.errors)")
        var names = ["quine.tar.gz", "nested30.tar.gz", "bomb.tar.gz", "bomb.zip", "save.tar.lzo", "save.tar.lrz", "save.tar.grz"]
        // Every format savetool reads, whole, then truncated and with a damaged header.
        let source = directory.appendingPathComponent("src")
        try FileManager.default.createDirectory(at: source, withIntermediateDirectories: true)
        for index in 0..<20 {
            try Data(String(repeating: "{\"player\": \(index), \"coins\": 120}\n", count: 50).utf8).write(to: source.appendingPathComponent("save-\(index).json"))
        }
        let formats: [(String, [String])] = [
            ("whole.tar", ["--format", "pax"]), ("whole.tar.gz", ["--format", "pax", "-z"]), ("whole.tar.zst", ["--format", "pax", "--zstd"]),
            ("whole.tar.xz", ["--format", "pax", "-J"]), ("whole.tar.bz2", ["--format", "pax", "-j"]), ("whole.tar.lz4", ["--format", "pax", "--lz4"]),
            ("whole.tar.Z", ["--format", "ustar", "-Z"]), ("whole.zip", ["--format", "zip"]), ("whole.7z", ["--format", "7zip"]),
            ("whole.cpio", ["--format", "newc"]), ("whole.iso", ["--format", "iso9660"]), ("whole.ar", ["--format", "ar"]),
        ]
        for (name, options) in formats {
            let made = try Processes.run(["bsdtar", "-c", "-f", directory.appendingPathComponent(name).path] + options + ["-C", source.path, "."])
            #expect(made.status == 0, "\(name): \(made.errors)")
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
            let stem = String(name.dropFirst("whole".count))
            try Data(bytes.prefix(bytes.count / 2)).write(to: directory.appendingPathComponent("half" + stem))
            try Data(bytes.prefix(100)).write(to: directory.appendingPathComponent("head100" + stem))
            var damaged = bytes
            for offset in stride(from: 8, to: min(damaged.count, 600), by: 7) { damaged[offset] ^= 0x5A }
            try Data(damaged).write(to: directory.appendingPathComponent("damaged" + stem))
            names += ["whole" + stem, "half" + stem, "head100" + stem, "damaged" + stem]
        }
        return names
    }

    @Test func everyHostileArchiveGetsACleanAnswerQuicklyWithNothingStartedOrWritten() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let archives = try Self.makeArchives(in: directory)
        #expect(archives.count == 7 + 12 * 4)
        // Fake decompressors first on PATH: each leaves a mark if it is ever run.
        let fakes = directory.appendingPathComponent("fake-bin")
        try FileManager.default.createDirectory(at: fakes, withIntermediateDirectories: true)
        let mark = directory.appendingPathComponent("a-program-ran")
        for program in ["lzop", "lrzip", "grzip", "gzip", "zstd", "xz", "bzip2", "lz4"] {
            let path = fakes.appendingPathComponent(program).path
            try "#!/bin/sh\ntouch '\(mark.path)'\nexit 1\n".write(toFile: path, atomically: true, encoding: .utf8)
            chmod(path, 0o755)
        }
        var environment = ProcessInfo.processInfo.environment
        environment["PATH"] = fakes.path + ":" + (environment["PATH"] ?? "/usr/bin:/bin")
        let destination = directory.appendingPathComponent("restored")
        var answered = 0
        for archive in archives {
            let path = directory.appendingPathComponent(archive).path
            for command in [["inspect", path], ["convert", path], ["import", path, "--into", destination.path]] {
                let started = Date()
                let result = try Processes.run(["/usr/bin/time", "-f", "peak-kib %M", CLI.executable] + command, environment: environment)
                let seconds = Date().timeIntervalSince(started)
                let peak = result.errors.split(separator: "\n").last.flatMap { $0.split(separator: " ").last }.flatMap { Int($0) } ?? .max
                let message = result.errors.split(separator: "\n").dropLast().joined(separator: "\n")
                #expect(result.status == 0 || result.status == 65, "\(command.joined(separator: " ")): exit \(result.status): \(message)")
                if result.status == 65 {
                    #expect(message.hasPrefix("savetool: \(path): "), "\(command[0]) \(archive): \(message)")
                    #expect(!message.contains("gave no reason"), "\(command[0]) \(archive): \(message)")
                }
                #expect(seconds < 2, "\(command[0]) \(archive) took \(seconds) s")
                #expect(peak < 200 * 1024, "\(command[0]) \(archive) peaked at \(peak) KiB")
                #expect(!FileManager.default.fileExists(atPath: destination.path), "\(archive): import wrote something")
                answered += 1
            }
        }
        #expect(answered == archives.count * 3)
        #expect(!FileManager.default.fileExists(atPath: mark.path), "an external program was started")
    }

    /// A manifest padded with whitespace (valid JSON) compresses a thousandfold: a small bundle
    /// must not fill the temporary directory. Past the bundle's size times --max-ratio (at least
    /// 64 MiB) it is refused, before anything else is read.
    @Test func aPaddedManifestIsBoundedByTheBundlesSize() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let bundle = directory.appendingPathComponent("padded.tar.gz").path
        let script = """
            import io, sys, tarfile
            manifest = b'{"format": "savetool.bundle/2", "files": [' + b' ' * (70 << 20) + b']}'
            with tarfile.open(sys.argv[1], "w:gz", compresslevel=1) as tar:
                info = tarfile.TarInfo("manifest.json"); info.size = len(manifest)
                tar.addfile(info, io.BytesIO(manifest))
            """
        #expect(try Processes.run(["python3", "-c", script, bundle]).status == 0)
        let result = try CLI.run("import", bundle, "--into", directory.appendingPathComponent("out").path)
        #expect(result.status == 65 && result.errors.contains("manifest.json is larger than 67108864 bytes"), "\(result.errors)")
        #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("out").path))
    }

    @Test func specificAnswers() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        _ = try Self.makeArchives(in: directory)
        for name in ["quine.tar.gz", "nested30.tar.gz"] {
            let layered = try CLI.run("inspect", directory.appendingPathComponent(name).path)
            #expect(layered.status == 65 && layered.errors.contains("more than 3 layers of compression"), "\(name): \(layered.errors)")
        }
        let quine = try CLI.run("import", directory.appendingPathComponent("quine.tar.gz").path, "--into", directory.appendingPathComponent("d").path)
        #expect(quine.status == 65 && quine.errors.contains("not a tar or zip archive"), "\(quine.errors)")
        let lzo = try CLI.run("import", directory.appendingPathComponent("save.tar.lzo").path, "--into", directory.appendingPathComponent("d").path)
        #expect(lzo.status == 65 && lzo.errors.contains("only an external program reads"), "\(lzo.errors)")
        // Formats savetool reads but does not write are listed, entries and all.
        for name in ["whole.7z", "whole.cpio", "whole.iso", "whole.ar", "whole.tar.bz2", "whole.tar.lz4", "whole.tar.Z"] {
            let listed = try CLI.run("--json", "inspect", directory.appendingPathComponent(name).path)
            #expect(listed.status == 0, "\(name): \(listed.errors)")
            let entries = try Codecs.value(listed.outputText)["entries"]?.arrayValue ?? []
            #expect(entries.contains { $0["path"]?.stringValue?.hasSuffix("save-7.json") == true }, "\(name): \(listed.outputText.prefix(300))")
        }
        // A zip bomb is listed from its headers without inflating it.
        let bomb = try CLI.run("--json", "inspect", directory.appendingPathComponent("bomb.zip").path)
        #expect(bomb.status == 0 && bomb.outputText.contains("1073741824"), "\(bomb.errors)")
        // A bundle is tar or zip under one layer of gzip, zstd or xz: nothing else is imported.
        let bzip2 = try CLI.run("import", directory.appendingPathComponent("whole.tar.bz2").path, "--into", directory.appendingPathComponent("d").path)
        #expect(bzip2.status == 65 && bzip2.errors.contains("expected a bundle"), "\(bzip2.errors)")
    }

    @Test func zipNamesInAForeignEncodingAreListedExactly() throws {
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let zip = directory.appendingPathComponent("cp866.zip").path
        // A zip written on a Russian DOS system: a cp866 name, without the UTF-8 flag.
        let script = #"""
            import sys, zipfile
            with zipfile.ZipFile(sys.argv[1], "w") as archive:
                info = zipfile.ZipInfo("x")
                info.filename = "сохранение.json".encode("cp866").decode("cp437")
                archive.writestr(info, b"{}")
            print("сохранение.json".encode("cp866").hex())
            """#
        let made = try Processes.run(["python3", "-c", script, zip])
        #expect(made.status == 0, "\(made.errors)")
        let listed = try CLI.run("--json", "inspect", zip)
        #expect(listed.status == 0, "\(listed.errors)")
        let entry = try #require(try Codecs.value(listed.outputText)["entries"]?.arrayValue?.first)
        // Listed as bsdtar lists it: without the UTF-8 flag a zip name is CP437, a mapping of
        // every byte to one character, so the name's bytes are all there.
        let bsdtar = try Processes.run(["bsdtar", "-tf", zip])
        #expect(entry["path"]?.stringValue == bsdtar.outputText.trimmingCharacters(in: .newlines), "\(listed.outputText)")
        let hex = made.outputText.trimmingCharacters(in: .whitespacesAndNewlines)
        let expected = stride(from: 0, to: hex.count, by: 2).map { UInt8(hex.dropFirst($0).prefix(2), radix: 16)! }
        #expect(expected.count == 15)
        let cp437 = try Processes.run(["python3", "-c", "import sys; print(sys.argv[1].encode('cp437').hex())", entry["path"]?.stringValue ?? ""])
        #expect(cp437.outputText.trimmingCharacters(in: .whitespacesAndNewlines) == hex, "the CP437 text maps back to the cp866 bytes")
    }
}
