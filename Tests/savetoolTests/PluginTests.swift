import Foundation
import SaveKit
import TestSupport
import Testing

/// External codecs: an executable named savetool-codec-<id> speaking typed JSON.
@Suite("Codec plugins")
struct PluginTests {
    /// A small "key=value lines" codec, written in Python the way a user would write one.
    static let plugin = #"""
        #!/usr/bin/env python3
        import json, sys
        mode = sys.argv[1]
        if mode == "describe":
            print(json.dumps({"id": "kv", "summary": "key=value lines", "extensions": ["kv"],
                              "magic": ["IyBrdgo="], "decode": True, "encode": True}))
        elif mode == "decode":
            pairs = {}
            for number, line in enumerate(sys.stdin.read().splitlines(), 1):
                if not line or line.startswith("#"):
                    continue
                if "=" not in line:
                    sys.exit(f"line {number}: no '=' in {line!r}")
                key, value = line.split("=", 1)
                pairs[key] = value
            json.dump(pairs, sys.stdout)
        elif mode == "encode":
            value = json.load(sys.stdin)
            sys.stdout.write("# kv\n" + "".join(f"{k}={v}\n" for k, v in value.items()))
        """#

    func install(_ script: String, name: String) throws -> URL {
        let directory = try Processes.temporaryDirectory("plugins")
        let path = directory.appendingPathComponent(name)
        try Data(script.utf8).write(to: path)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path.path)
        return directory
    }

    @Test func aPluginIsACodecLikeAnyOther() throws {
        let plugins = try install(Self.plugin, name: "savetool-codec-kv")
        defer { try? FileManager.default.removeItem(at: plugins) }
        let listed = try CLI.run("formats", "list", "--plugins", plugins.path)
        #expect(listed.outputText.contains("kv"))
        #expect(listed.outputText.contains(plugins.path + "/savetool-codec-kv"))
        let input = Array("# kv\nname=Ana\nlevel=3\n".utf8)
        let decoded = try CLI.run("convert", "-", "--plugins", plugins.path, "--compact", input: input)
        #expect(decoded.outputText == #"{"name":"Ana","level":"3"}"# + "\n", "\(decoded.errors)")
        let encoded = try CLI.run("convert", "-", "--to", "kv", "--plugins", plugins.path, input: Array(#"{"a":"b"}"#.utf8))
        #expect(encoded.outputText == "# kv\na=b\n")
        let failing = try CLI.run("convert", "-", "--from", "kv", "--plugins", plugins.path, input: Array("oops\n".utf8))
        #expect(failing.status == 65)
        #expect(failing.errors.contains("plugin savetool-codec-kv: decode failed (exit 1): line 1: no '=' in 'oops'"))
        // An encode that fails is about the output, and names it.
        let out = plugins.appendingPathComponent("out.kv").path
        let refusing = try install(Self.plugin.replacingOccurrences(of: "value = json.load(sys.stdin)", with: "sys.exit('cannot write kv')"), name: "savetool-codec-kv")
        defer { try? FileManager.default.removeItem(at: refusing) }
        let encodeFailed = try CLI.run("convert", "-", "-o", out, "--plugins", refusing.path, input: Array(#"{"a":"b"}"#.utf8))
        #expect(encodeFailed.status == 65 && encodeFailed.errors.hasPrefix("savetool: \(out): plugin savetool-codec-kv: encode failed (exit 1): cannot write kv"), "\(encodeFailed.errors)")
    }

    /// A plugin that says what its format holds (`"holds": ["string"]`, key=value text) is
    /// never handed a date as a marker object: the value is lowered as for a built-in codec
    /// that holds no dates (written as its text, with a warning naming the file).
    @Test func whatAPluginCannotHoldIsLoweredNotWrittenAsAMarker() throws {
        let holding = Self.plugin.replacingOccurrences(of: #""decode": True, "encode": True}"#, with: #""decode": True, "encode": True, "holds": ["string"]}"#)
        #expect(holding != Self.plugin)
        let plugins = try install(holding, name: "savetool-codec-kv")
        defer { try? FileManager.default.removeItem(at: plugins) }
        let file = plugins.appendingPathComponent("save.kv")
        try Data("# kv\nname=Ana\n".utf8).write(to: file)
        let lowered = try CLI.run("set", file.path, "/when", #"{"$date": "2026-11-21T08:00:00Z"}"#, "--plugins", plugins.path)
        #expect(lowered.status == 0, "\(lowered.errors)")
        #expect(lowered.errors.contains(file.path + ": 1 date, data or uid value written as string or integer: kv holds no such type\n"), "\(lowered.errors)")
        #expect(try String(contentsOf: file, encoding: .utf8) == "# kv\nname=Ana\nwhen=2026-11-21T08:00:00Z\n")
        #expect(try CLI.run("set", file.path, "/level", "3", "--string", "--plugins", plugins.path).status == 0)
        // An unknown type name in "holds" is the plugin's mistake, reported.
        let wrong = Self.plugin.replacingOccurrences(of: #""encode": True}"#, with: #""encode": True, "holds": ["strings"]}"#)
        let broken = try install(wrong, name: "savetool-codec-kv")
        defer { try? FileManager.default.removeItem(at: broken) }
        #expect(try CLI.run("formats", "list", "--plugins", broken.path).errors.contains("\"holds\""))
    }

    /// A plugin's magic is asked before the built-in codecs: it claims its files even where a
    /// built-in codec would read them; `--from` still names the codec to use.
    @Test func aPluginsMagicClaimsFilesABuiltInWouldRead() throws {
        let claiming = Self.plugin.replacingOccurrences(of: #""magic": ["IyBrdgo="]"#, with: #""magic": ["ew=="]"#)
        #expect(claiming != Self.plugin)
        let plugins = try install(claiming, name: "savetool-codec-kv")
        defer { try? FileManager.default.removeItem(at: plugins) }
        let file = plugins.appendingPathComponent("save.json")
        try Data(#"{"a": 5}"#.utf8).write(to: file)
        let claimed = try CLI.run("get", file.path, "/a", "--plugins", plugins.path)
        #expect(claimed.status == 65 && claimed.errors.contains("plugin savetool-codec-kv: decode failed"), "\(claimed.errors)")
        #expect(try CLI.run("get", file.path, "/a", "--plugins", plugins.path, "--from", "json").outputText == "5\n")
        #expect(try CLI.run("get", file.path, "/a").outputText == "5\n")
    }

    /// A plugin that hangs in `describe` is stopped after a short time (not the 10 s a call
    /// may take), every plugin describes itself at once, and each problem is told once.
    @Test func aPluginHangingInDescribeCostsLittleAndIsToldOnce() throws {
        let hanging = "#!/bin/sh\nsleep 60\n"
        let plugins = try install(hanging, name: "savetool-codec-stuck")
        defer { try? FileManager.default.removeItem(at: plugins) }
        let second = plugins.appendingPathComponent("savetool-codec-stuck2")
        try Data(hanging.utf8).write(to: second)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: second.path)
        let file = plugins.appendingPathComponent("a.json")
        try Data(#"{"a": 1}"#.utf8).write(to: file)
        let result = try CLI.run("--plugins", plugins.path, "get", file.path, "/a")
        #expect(result.status == 0 && result.outputText == "1\n", "\(result.errors)")
        let warnings = result.errors.split(separator: "\n").filter { $0.contains("ignoring plugin") }
        #expect(warnings.count == 2, "\(warnings)")
        #expect(warnings.allSatisfy { $0.contains("describe ran longer than 3 s and was stopped") }, "\(warnings)")
    }

    @Test func aHangingPluginIsStopped() throws {
        // It starts a child of its own, which is stopped with it: left, it would run on. (Its
        // duration is this run's own, to be found among other runs' processes.)
        let child = "sleep 61.\(Int.random(in: 100_000...999_999))"
        let hanging = "#!/bin/sh\nif [ \"$1\" = describe ]; then echo '{\"id\":\"slow\",\"extensions\":[\"slow\"],\"magic\":[],\"decode\":true,\"encode\":true}'; else \(child) & sleep 60; fi\n"
        let plugins = try install(hanging, name: "savetool-codec-slow")
        defer { try? FileManager.default.removeItem(at: plugins) }
        var environment = ProcessInfo.processInfo.environment
        environment["SAVETOOL_PLUGIN_TIMEOUT"] = "1"
        let start = Date()
        let result = try CLI.run("convert", "-", "--from", "slow", "--plugins", plugins.path, input: [0x61], environment: environment)
        #expect(result.status == 65)
        #expect(result.errors.contains("decode ran longer than 1 s and was stopped"))
        #expect(Date().timeIntervalSince(start) < 20)
        usleep(200_000)
        // Every process's command line, from /proc (no pgrep needed).
        let running = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        let commands = running.filter { $0.allSatisfy(\.isNumber) }.compactMap { pid in
            (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))).map { String(decoding: $0.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self) }
        }
        #expect(!commands.contains { $0.contains(child) }, "what the plugin started is stopped too")
    }

    /// savetool interrupted (Ctrl-C, or SIGTERM from `timeout` or a job runner) while a plugin
    /// works stops the plugin's process group first: a terminal's Ctrl-C never reaches it.
    @Test(arguments: [SIGINT, SIGTERM])
    func anInterruptedRunStopsItsPlugin(_ signal: Int32) throws {
        let child = "sleep 62.\(Int.random(in: 100_000...999_999))"
        let hanging = "#!/bin/sh\nif [ \"$1\" = describe ]; then echo '{\"id\":\"slow\",\"extensions\":[\"slow\"],\"magic\":[],\"decode\":true,\"encode\":true}'; else \(child); fi\n"
        let plugins = try install(hanging, name: "savetool-codec-slow")
        defer { try? FileManager.default.removeItem(at: plugins) }
        let input = plugins.appendingPathComponent("a.slow")
        try Data("a".utf8).write(to: input)
        // Started as a terminal starts it, with SIGINT and SIGTERM in their default course (a test
        // runner's children may inherit them blocked or ignored, which savetool leaves so).
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [
            "python3", "-c",
            "import os, signal, sys\nfor s in (signal.SIGINT, signal.SIGTERM): signal.signal(s, signal.SIG_DFL)\nsignal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})\nos.execv(sys.argv[1], sys.argv[1:])",
            CLI.executable, "convert", input.path, "--from", "slow", "--plugins", plugins.path,
        ]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        func commands() -> [String] {
            let running = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
            return running.filter { $0.allSatisfy(\.isNumber) }.compactMap { pid in
                (try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))).map { String(decoding: $0.map { $0 == 0 ? 0x20 : $0 }, as: UTF8.self) }
            }
        }
        let deadline = Date().addingTimeInterval(20)
        while !commands().contains(where: { $0.contains(child) }), Date() < deadline { usleep(50_000) }
        #expect(commands().contains { $0.contains(child) }, "the plugin is at work")
        kill(process.processIdentifier, signal)
        process.waitUntilExit()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == signal, "\(process.terminationReason.rawValue) \(process.terminationStatus)")
        usleep(200_000)
        #expect(!commands().contains { $0.contains(child) }, "the plugin's group is stopped with savetool")
    }

    /// A plugin that prints without end is stopped at its output limit (a save document's most,
    /// 1 GiB, by default) with a message, before its timeout and before memory runs out; a
    /// plugin's stderr is kept only in part for its message (its end). And its failures read like every
    /// other error: `file: plugin …`, with the space.
    @Test func aPluginPrintingWithoutEndIsStoppedAtItsLimit() throws {
        let endless = "#!/bin/sh\nif [ \"$1\" = describe ]; then echo '{\"id\":\"yes\",\"extensions\":[\"yes\"],\"magic\":[],\"decode\":true,\"encode\":true}'; else yes 0123456789abcdef; fi\n"
        let plugins = try install(endless, name: "savetool-codec-yes")
        defer { try? FileManager.default.removeItem(at: plugins) }
        var codec = try ExternalCodec(executable: plugins.path + "/savetool-codec-yes", timeout: 30)
        codec.outputLimit = 4 << 20
        let start = Date()
        #expect {
            _ = try codec.decode([0x61], options: DecodingOptions())
        } throws: { error in
            "\(error)" == "plugin savetool-codec-yes: decode printed more than 4 MiB and was stopped, expected a save document"
        }
        #expect(Date().timeIntervalSince(start) < 10, "stopped at its limit, not at its timeout")
        let failing = "#!/bin/sh\nif [ \"$1\" = describe ]; then echo '{\"id\":\"fail\",\"extensions\":[\"fail\"],\"magic\":[],\"decode\":true,\"encode\":true}'; else head -c 200000 /dev/zero | tr '\\0' x >&2; echo; echo broken >&2; exit 3; fi\n"
        let failingPlugins = try install(failing, name: "savetool-codec-fail")
        defer { try? FileManager.default.removeItem(at: failingPlugins) }
        let directory = try Processes.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: directory) }
        let file = directory.appendingPathComponent("a.fail").path
        try Data("x".utf8).write(to: URL(fileURLWithPath: file))
        let decoded = try CLI.run("convert", file, "--plugins", failingPlugins.path)
        #expect(decoded.status == 65)
        #expect(decoded.errors.hasPrefix("savetool: \(file): plugin savetool-codec-fail: decode failed (exit 3): xxx"), "\(decoded.errors.prefix(200))")
        #expect(decoded.errors.utf8.count < 3_000, "stderr kept only in part, on one line")
        let ending = String(decoded.errors.suffix(40))
        #expect(ending.hasSuffix("xbroken\n") && decoded.errors.split(separator: "\n").count == 1, "its end, where the error is: \(ending)")
        // A plugin writing to stderr without end, run with 600 MB of address space: stopped at
        // its timeout with its message (the stderr kept grew to gigabytes, and such a run died).
        let noisy = "#!/bin/sh\nif [ \"$1\" = describe ]; then echo '{\"id\":\"noisy\",\"extensions\":[\"noisy\"],\"magic\":[],\"decode\":true,\"encode\":true}'; else yes noise >&2; fi\n"
        let noisyPlugins = try install(noisy, name: "savetool-codec-noisy")
        defer { try? FileManager.default.removeItem(at: noisyPlugins) }
        var environment = ProcessInfo.processInfo.environment
        environment["SAVETOOL_PLUGIN_TIMEOUT"] = "1"
        let limited = try Processes.run(
            ["/bin/sh", "-c", "ulimit -v 600000; exec \"$0\" \"$@\"", CLI.executable, "convert", "-", "--from", "noisy", "--plugins", noisyPlugins.path],
            input: [0x61], environment: environment)
        #expect(limited.status == 65 && limited.errors.hasSuffix("decode ran longer than 1 s and was stopped\n"), "\(limited.status): \(limited.errors.suffix(300))")
    }

    /// A plugin that answers and exits, leaving a process of its own running (its streams
    /// elsewhere), is answered at once: the process left behind does not hide the exit.
    @Test func aPluginThatLeavesAProcessRunningIsNotTakenForAHangingOne() throws {
        let leaving = "#!/bin/sh\nif [ \"$1\" = describe ]; then echo '{\"id\":\"left\",\"extensions\":[\"left\"],\"decode\":true}'; "
            + "else cat >/dev/null; echo '{\"ok\": 1}'; (sleep 4 >/dev/null 2>&1 </dev/null) & exit 0; fi\n"
        let plugins = try install(leaving, name: "savetool-codec-left")
        defer { try? FileManager.default.removeItem(at: plugins) }
        var environment = ProcessInfo.processInfo.environment
        environment["SAVETOOL_PLUGIN_TIMEOUT"] = "2"
        let result = try CLI.run("convert", "-", "--from", "left", "--plugins", plugins.path, "--compact", input: [0x61], environment: environment)
        #expect(result.status == 0 && result.outputText == #"{"ok":1}"# + "\n", "\(result.errors)")
    }

    /// Plugins are looked for in every folder of PATH, once per folder: a folder named twice,
    /// or again through a link (`/bin` and `/usr/bin` on a merged-/usr system), is listed once,
    /// and the first plugin of a name is the one used.
    @Test func aFolderNamedTwiceOnPathIsListedOnce() throws {
        let plugins = try install(Self.plugin, name: "savetool-codec-kv")
        defer { try? FileManager.default.removeItem(at: plugins) }
        let other = try install(Self.plugin, name: "savetool-codec-kv")
        defer { try? FileManager.default.removeItem(at: other) }
        for name in ["savetool-codec-", "savetool-codec", "not-savetool-codec-kv"] {
            try Data("#!/bin/sh\nexit 1\n".utf8).write(to: plugins.appendingPathComponent(name))
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: plugins.appendingPathComponent(name).path)
        }
        let link = other.appendingPathComponent("link")
        try FileManager.default.createSymbolicLink(atPath: link.path, withDestinationPath: plugins.path)
        #expect(ExternalCodec.discover(in: [plugins.path, link.path, plugins.path + "/", other.path])
            == [plugins.path + "/savetool-codec-kv"])
        #expect(ExternalCodec.discover(in: [other.path + "/missing", link.path, plugins.path])
            == [link.path + "/savetool-codec-kv"])
    }

    /// A description with a field of the wrong type is refused with what was expected, not read
    /// as something else ("decode": "yes" as false); a folder named like a plugin is no plugin;
    /// a timeout that is no number of seconds is said to be ignored.
    @Test func aMistypedDescriptionIsReportedAndSkipped() throws {
        let plugins = try install(Self.plugin, name: "savetool-codec-kv")
        defer { try? FileManager.default.removeItem(at: plugins) }
        let described = [
            "savetool-codec-types": #"{"id":"types","extensions":"ty","decode":true}"#,
            "savetool-codec-yes": #"{"id":"yes","decode":"yes"}"#,
            "savetool-codec-magic": #"{"id":"magic","magic":["!!notbase64"],"decode":true}"#,
            "savetool-codec-wrongid": #"{"id":"other","decode":true}"#,
            "savetool-codec-list": #"["id"]"#,
        ]
        for (name, description) in described {
            let path = plugins.appendingPathComponent(name)
            try Data("#!/bin/sh\necho '\(description)'\n".utf8).write(to: path)
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: path.path)
        }
        try FileManager.default.createDirectory(at: plugins.appendingPathComponent("savetool-codec-folder"), withIntermediateDirectories: false)
        var environment = ProcessInfo.processInfo.environment
        environment["SAVETOOL_PLUGIN_TIMEOUT"] = "abc"
        let listed = try CLI.run("formats", "--plugins", plugins.path, environment: environment)
        #expect(listed.status == 0)
        let warnings = listed.errors.split(separator: "\n").map(String.init)
        let path = { (name: String) in plugins.appendingPathComponent(name).path }
        #expect(Set(warnings) == [
            "savetool: warning: SAVETOOL_PLUGIN_TIMEOUT is 'abc', expected a number of seconds above 0; plugins get 10 s",
            #"savetool: warning: ignoring plugin \#(path("savetool-codec-list")): plugin savetool-codec-list: describe printed an array, expected an object {"id", "extensions", "magic", "decode", "encode"}"#,
            #"savetool: warning: ignoring plugin \#(path("savetool-codec-magic")): plugin savetool-codec-magic: describe lists "!!notbase64" in "magic", expected the base64 of a file's first bytes"#,
            #"savetool: warning: ignoring plugin \#(path("savetool-codec-types")): plugin savetool-codec-types: describe gave "extensions" as a string, expected an array of extensions such as ["zjson"]"#,
            #"savetool: warning: ignoring plugin \#(path("savetool-codec-wrongid")): plugin savetool-codec-wrongid: describe gave the id "other", expected "wrongid" as in its file name"#,
            #"savetool: warning: ignoring plugin \#(path("savetool-codec-yes")): plugin savetool-codec-yes: describe gave "decode" as a string, expected true or false"#,
        ], "\(warnings)")
    }

    @Test func aBrokenPluginIsReportedAndSkipped() throws {
        let plugins = try install("#!/bin/sh\necho not json\n", name: "savetool-codec-broken")
        defer { try? FileManager.default.removeItem(at: plugins) }
        let listed = try CLI.run("formats", "--plugins", plugins.path)
        #expect(listed.status == 0)
        #expect(listed.errors.contains("ignoring plugin"))
        #expect(!listed.outputText.contains("broken"))
    }
}
