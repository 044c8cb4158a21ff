import Foundation
@testable import SaveKit
import TestSupport
import Testing

/// `convert` reads a binary keyed archive's view straight from its object table
/// (``KeyedViewEvents``). It must give exactly what the tree reader gives: the same JSON for
/// every archive that reads, and the same error for every one that does not.
@Suite("Keyed archives streamed from the object table")
struct KeyedArchiveStreamingTests {
    enum Outcome {
        case read([UInt8])
        case refused(String)
    }

    /// The view as the tree reader builds it, written as JSON; or its error.
    static func fromTree(_ bytes: [UInt8], options: DecodingOptions = DecodingOptions()) -> Outcome {
        do {
            var output = ByteArrayOutput()
            let view = try KeyedArchiveCodec().decode(bytes, options: options)
            try Conversion.write(view, with: JSONCodec(), to: &output)
            return .read(output.bytes)
        } catch {
            return .refused("\(error)")
        }
    }

    /// The view as `convert` streams it; or its error.
    static func streamed(_ bytes: [UInt8], options: DecodingOptions = DecodingOptions()) -> Outcome {
        do {
            var output = ByteArrayOutput()
            #expect(KeyedArchiveCodec().events(in: bytes, options: options) != nil)
            try Conversion.convert(bytes, from: KeyedArchiveCodec(), to: JSONCodec(), decoding: options, to: &output)
            return .read(output.bytes)
        } catch {
            return .refused("\(error)")
        }
    }

    static func expectSame(
        _ bytes: [UInt8], _ name: String, options: DecodingOptions = DecodingOptions(), sourceLocation: SourceLocation = #_sourceLocation
    ) -> Bool {
        let tree = fromTree(bytes, options: options), stream = streamed(bytes, options: options)
        switch (tree, stream) {
        case (.read(let a), .read(let b)):
            #expect(a == b, "\(name): the streamed view differs:\n\(String(decoding: a.prefix(600), as: UTF8.self))\n---\n\(String(decoding: b.prefix(600), as: UTF8.self))", sourceLocation: sourceLocation)
            return true
        case (.refused(let a), .refused(let b)):
            #expect(a == b, "\(name): \(a) / \(b)", sourceLocation: sourceLocation)
            return false
        default:
            Issue.record("\(name): the tree reader says \(tree), the stream says \(stream)", sourceLocation: sourceLocation)
            return false
        }
    }

    @Test(arguments: MacOSKeyedArchiveTests.files)
    func archivesWrittenOnMacOSStreamAsTheyRead(_ file: String) throws {
        #expect(Self.expectSame(try Corpus.bytes(file), file))
    }

    @Test func foundationsOwnArchiveStreams() throws {
        let bytes = try KeyedArchiveTests.archived(KeyedArchiveTests.player())
        #expect(KeyedArchive.isBinaryKeyedArchive(bytes))
        #expect(Self.expectSame(bytes, "player"))
    }

    /// Random graphs (shared objects, cycles, every collection class and form, odd class chains,
    /// dictionaries with keys that are not names, UTF-16 text, `$`-names), some with a fault put
    /// in on purpose, then each with single bytes changed.
    @Test func randomGraphsAndDamagedBytesReadAlike() throws {
        var generator = SeededGenerator(seed: 20_261_124)
        var (read, refused, damaged) = (0, 0, 0)
        for index in 0..<300 {
            let plist = RandomKeyedArchive.make(using: &generator)
            let bytes = try BinaryPlistCodec().encode(plist)
            if Self.expectSame(bytes, "archive \(index)") { read += 1 } else { refused += 1 }
            for _ in 0..<12 {
                var changed = bytes
                let position = Int.random(in: 8..<changed.count, using: &generator)
                changed[position] = UInt8.random(in: 0...255, using: &generator)
                if Self.expectSame(changed, "archive \(index) with byte \(position) changed") { damaged += 1 }
            }
        }
        // Most archives read, some are refused, and damaged ones both read and fail.
        #expect(read > 200 && refused > 10 && damaged > 300, "read \(read), refused \(refused), damaged but read \(damaged)")
    }

    @Test func limitsAndFaultsGiveTheTreeReadersErrors() throws {
        // Deep nesting, a cycle, a string repeated past the limit, a uid past the table.
        var objects: [SaveValue] = ["$null", ["$classname": "Node", "$classes": ["Node", "NSObject"]]]
        for index in 0..<2000 { objects.append(["next": .uid(UInt64(index + 3)), "$class": .uid(1)]) }
        objects.append(["next": .uid(2), "$class": .uid(1)])
        let deep: SaveValue = ["$archiver": "NSKeyedArchiver", "$version": 100_000, "$top": ["root": .uid(2)], "$objects": .array(objects)]
        let long = String(repeating: "x", count: 100_000)
        let repeated: SaveValue = [
            "$archiver": "NSKeyedArchiver", "$top": ["root": .uid(3)],
            "$objects": [
                "$null", ["$classname": "P", "$classes": ["P", "NSObject"]], .string(long), ["items": .uid(4), "$class": .uid(1)],
                ["NS.objects": .array(Array(repeating: .uid(2), count: 3_000)), "$class": .uid(5)], ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]],
            ],
        ]
        let past: SaveValue = ["$archiver": "NSKeyedArchiver", "$top": ["root": .uid(9)], "$objects": ["$null"]]
        for (name, plist) in [("deep", deep), ("repeated", repeated), ("past", past), ("nested view", Self.nestedView)] {
            let bytes = try BinaryPlistCodec().encode(plist)
            #expect(!Self.expectSame(bytes, name))
        }
        // One empty array met near the top and again at the depth limit (the writer stores it
        // once): the tree reader reads it once, at the top, and so must a conversion.
        var inner: SaveValue = []
        for _ in 0..<62 { inner = [inner] }
        let shared: SaveValue = ["$archiver": "NSKeyedArchiver", "$top": ["x": [], "y": inner], "$objects": ["$null"]]
        let sharedBytes = try BinaryPlistCodec().encode(shared)
        var shallow = DecodingOptions()
        shallow.maxDepth = 64
        // The stream's own walk stops there (it goes through the array each time it is met) and
        // hands the archive to the tree reader.
        #expect(throws: BinaryPlistReader.Failure.self) { _ = try sharedBytes.withUnsafeBufferPointer { try KeyedViewStream(bytes: $0, options: shallow) } }
        #expect(Self.expectSame(sharedBytes, "a shared array met deep", options: shallow))
        if case .refused(let message) = Self.streamed(try BinaryPlistCodec().encode(deep)) { #expect(message.contains("nested more than 512 deep")) }
    }

    /// 300 collections, each inside the one before: 300 objects deep, but 600 levels of view
    /// (`{"$class", "$items": [...]}`), past what the view's writer takes.
    static let nestedView: SaveValue = {
        var chain: [SaveValue] = ["$null", ["$classname": "NSMutableArray", "$classes": ["NSMutableArray", "NSArray", "NSObject"]]]
        for index in 0..<300 { chain.append(["NS.objects": index == 299 ? [] : [.uid(UInt64(index + 3))], "$class": .uid(1)]) }
        return ["$archiver": "NSKeyedArchiver", "$top": ["root": .uid(2)], "$objects": .array(chain)]
    }()

    /// A fault in the graph stops the conversion before it writes anything, even when the
    /// view before the fault is larger than the writer's first chunk.
    @Test func aFaultInTheGraphStopsTheConversionBeforeItWrites() throws {
        struct CountingOutput: ByteOutput {
            var written = 0
            mutating func write(_ bytes: UnsafeRawBufferPointer) { written += bytes.count }
        }
        let names = 100_000
        var objects: [SaveValue] = ["$null", ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]]]
        objects.append(["NS.objects": .array((0...names).map { .uid(UInt64(3 + $0)) }), "$class": .uid(1)])
        objects += (0..<names).map { .string("player \($0), whose name is long enough to fill a chunk") }
        objects.append(["name": "an object without a class"])
        let classless = try BinaryPlistCodec().encode(["$archiver": "NSKeyedArchiver", "$top": ["root": .uid(2)], "$objects": .array(objects)])
        // A 1 MiB string, 300 times: past the 256 MiB the view may repeat.
        let repeated = try BinaryPlistCodec().encode([
            "$archiver": "NSKeyedArchiver", "$top": ["root": .uid(2)],
            "$objects": ["$null", ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]], ["NS.objects": .array(Array(repeating: .uid(3), count: 300)), "$class": .uid(1)], .string(String(repeating: "z", count: 1 << 20))],
        ])
        let nested = try BinaryPlistCodec().encode(Self.nestedView)
        for (bytes, message) in [
            (classless, "/$objects/\(names + 3): an object without $class"), (repeated, "repeated past 256 MiB"), (nested, "nesting deeper than 512 levels"),
        ] {
            var output = CountingOutput()
            #expect {
                try Conversion.convert(bytes, from: KeyedArchiveCodec(), to: JSONCodec(), to: &output)
            } throws: { error in
                "\(error)".contains(message)
            }
            #expect(output.written == 0, "\(message)")
        }
    }

    /// An object with many fields, referenced many times, is read once: counting references
    /// reads each entry of the table once.
    @Test func anObjectReferencedManyTimesIsReadOnce() throws {
        var fields: [(String, SaveValue)] = (0..<10_000).map { ("field\($0)", .integer(Int64($0))) }
        fields.append(("$class", .uid(1)))
        let plist: SaveValue = [
            "$archiver": "NSKeyedArchiver", "$top": ["root": .uid(3)],
            "$objects": [
                "$null", ["$classname": "Wide", "$classes": ["Wide", "NSObject"]], .dictionary(.init(uniqueKeysWithValues: fields)),
                ["NS.objects": .array(Array(repeating: .uid(2), count: 100_000)), "$class": .uid(4)], ["$classname": "NSArray", "$classes": ["NSArray", "NSObject"]],
            ],
        ]
        #expect(Self.expectSame(try BinaryPlistCodec().encode(plist), "wide"))
    }

    /// A reading that keeps the last of a repeated key goes through the tree reader, which
    /// decides which `$top` counts.
    @Test func keepingTheLastKeyIsLeftToTheTreeReader() throws {
        let bytes = try KeyedArchiveTests.archived(KeyedArchiveTests.player())
        var options = DecodingOptions()
        #expect(CodecRegistry.builtIn.keyedArchiveStreaming(bytes, decodedBy: BinaryPlistCodec(), options: options) != nil)
        options.duplicateKeys = .last
        #expect(CodecRegistry.builtIn.keyedArchiveStreaming(bytes, decodedBy: BinaryPlistCodec(), options: options) == nil)
        #expect(KeyedArchiveCodec().events(in: bytes, options: options) == nil)
    }

    /// Two keys of 15 bytes and more, one the start of the other, are two keys: their markers
    /// are the same (the length follows the marker), and so are their first bytes.
    @Test func longKeysSharingAPrefixAreTwoKeys() throws {
        let value: SaveValue = ["NS.dateTemplate": 1, "NS.dateTemplate[NS.modified]": 2, "a key of thirty-one bytes, long": 3, "a key of thirty-one bytes, long!": 4]
        let bytes = try BinaryPlistCodec().encode(value)
        var output = ByteArrayOutput()
        try Conversion.convert(bytes, from: BinaryPlistCodec(), to: JSONCodec(), to: &output)
        #expect(try JSONCodec().decode(output.bytes) == value)
    }

    /// Keys that Swift holds equal but that are stored differently (composed and decomposed,
    /// ASCII and UTF-16, or a length written two ways) are one key twice, in the streaming reader
    /// as in the tree reader.
    @Test(arguments: [
        ("composed and decomposed", [0x64, 0, 0x63, 0, 0x61, 0, 0x66, 0, 0xE9], [0x65, 0, 0x63, 0, 0x61, 0, 0x66, 0, 0x65, 0x03, 0x01]),
        ("ASCII and UTF-16", [0x53, 0x61, 0x62, 0x63], [0x63, 0, 0x61, 0, 0x62, 0, 0x63]),
        ("a length in the marker and after it", [0x51, 0x78], [0x5F, 0x10, 0x01, 0x78]),
    ] as [(String, [UInt8], [UInt8])])
    func canonicallyEqualKeysAreOneKeyTwice(_ name: String, _ first: [UInt8], _ second: [UInt8]) throws {
        // A dictionary (object 0) of two keys (objects 1 and 2) holding 1 and 2 (objects 3 and 4).
        let objects: [[UInt8]] = [[0xD2, 1, 2, 3, 4], first, second, [0x10, 1], [0x10, 2]]
        var bytes = Array("bplist00".utf8)
        var offsets: [UInt8] = []
        for object in objects {
            offsets.append(UInt8(bytes.count))
            bytes += object
        }
        let table = bytes.count
        bytes += offsets
        bytes += [0, 0, 0, 0, 0, 0, 1, 1] + [0, 0, 0, 0, 0, 0, 0, UInt8(objects.count)] + [UInt8](repeating: 0, count: 8) + [0, 0, 0, 0, 0, 0, 0, UInt8(table)]
        #expect(throws: CodecError.self, "\(name), read as a tree") { try BinaryPlistCodec().decode(bytes) }
        var output = ByteArrayOutput()
        #expect(throws: CodecError.self, "\(name), streamed") { try Conversion.convert(bytes, from: BinaryPlistCodec(), to: JSONCodec(), to: &output) }
    }
}

/// Keyed archives of random object graphs, built as property lists.
enum RandomKeyedArchive {
    static let classes: [SaveValue] = [
        ["$classname": "Player", "$classes": ["Player", "NSObject"]],
        ["$classname": "Item", "$classes": ["Item", "GameObject", "NSObject"]],
        ["$classes": ["NSArray", "NSObject"], "$classname": "NSArray"],
        ["$classname": "NSMutableArray", "$classes": ["NSMutableArray", "NSArray", "NSObject"]],
        ["$classname": "NSSet", "$classes": ["NSSet", "NSObject"]],
        ["$classname": "NSDictionary", "$classes": ["NSDictionary", "NSObject"]],
        ["$classname": "NSMutableDictionary", "$classes": ["NSMutableDictionary", "NSDictionary", "NSObject"]],
        ["$classname": "NSDate", "$classes": ["NSDate", "NSObject"]],
        ["$classname": "NSArray", "$classes": ["NSArray"]],
        ["$classname": "NSDictionary"],
    ]
    static let fieldNames = ["name", "level", "xp", "items", "friend", "$items", "$$odd", "$id", "NS.objects", "Zo\u{EB}", "玩家", "e\u{301}"]
    static let texts = ["Ana", "Zo\u{EB}", "玩家", "$null", "$x", "level", "", "caf\u{E9}", "cafe\u{301}", "😀"]

    static func make<G: RandomNumberGenerator>(using generator: inout G) -> SaveValue {
        let objectCount = Int.random(in: 2...24, using: &generator)
        let firstClass = 1 + objectCount
        let count = firstClass + classes.count
        func anyUID() -> SaveValue { .uid(UInt64(Int.random(in: 0..<firstClass, using: &generator))) }
        func classUID(_ index: Int) -> SaveValue { .uid(UInt64(firstClass + index)) }
        func scalar() -> SaveValue {
            switch Int.random(in: 0..<7, using: &generator) {
            case 0: .integer(Int64.random(in: -1000...1000, using: &generator))
            case 1: .real(Double(Int.random(in: -100...100, using: &generator)) / 8)
            case 2: .bool(Bool.random(using: &generator))
            case 3: .string(texts.randomElement(using: &generator)!)
            case 4: .data(Data([1, 2, UInt8.random(in: 0...255, using: &generator)]))
            case 5: .date(Date(timeIntervalSinceReferenceDate: Double(Int.random(in: 0...1_000_000, using: &generator))))
            default: .array([anyUID(), anyUID()])
            }
        }
        func uids(_ n: Int) -> SaveValue { .array((0..<n).map { _ in anyUID() }) }
        var objects: [SaveValue] = ["$null"]
        for _ in 0..<objectCount {
            let object: SaveValue
            switch Int.random(in: 0..<10, using: &generator) {
            case 0, 1, 2:
                var fields: [(String, SaveValue)] = [("$class", classUID(Int.random(in: 0...1, using: &generator)))]
                for _ in 0..<Int.random(in: 0...4, using: &generator) {
                    let name = fieldNames.randomElement(using: &generator)!
                    if !fields.contains(where: { $0.0 == name }) { fields.append((name, Bool.random(using: &generator) ? anyUID() : scalar())) }
                }
                object = .dictionary(.init(uniqueKeysWithValues: fields))
            case 3:
                var fields: [String: SaveValue] = ["NS.objects": uids(Int.random(in: 0...4, using: &generator)), "$class": classUID([2, 3, 4, 8].randomElement(using: &generator)!)]
                if Int.random(in: 0..<6, using: &generator) == 0 { fields["extra"] = 1 }
                object = .dictionary(.init(uniqueKeysWithValues: fields.sorted { $0.key < $1.key }))
            case 4:
                let n = Int.random(in: 0...3, using: &generator)
                let values = Int.random(in: 0..<6, using: &generator) == 0 ? n + 1 : n
                object = ["NS.keys": uids(n), "NS.objects": uids(values), "$class": classUID([5, 6, 9].randomElement(using: &generator)!)]
            case 5:
                object = ["NS.time": Bool.random(using: &generator) ? .real(12.5) : .integer(7), "$class": classUID(7)]
            case 6, 7:
                object = .string(texts.randomElement(using: &generator)!)
            case 8:
                object = .integer(Int64.random(in: 0...99, using: &generator))
            default:
                object = .data(Data([9, 8, 7]))
            }
            objects.append(object)
        }
        objects += classes
        // Now and then a fault: a uid past the table, a dictionary in a field, an object with no
        // class, a class that is a string.
        switch Int.random(in: 0..<25, using: &generator) {
        case 0: objects[1] = ["$class": classUID(0), "bad": .uid(UInt64(count + 3))]
        case 1: objects[1] = ["$class": classUID(0), "inline": ["a": 1]]
        case 2: objects[1] = ["name": "no class"]
        case 3: objects[1] = ["$class": .uid(0)]
        default: break
        }
        var top: [(String, SaveValue)] = [("root", .uid(UInt64(Int.random(in: 1...objectCount, using: &generator))))]
        if Bool.random(using: &generator) { top.append(("other", anyUID())) }
        return [
            "$archiver": "NSKeyedArchiver", "$version": 100_000, "$top": .dictionary(.init(uniqueKeysWithValues: top)), "$objects": .array(objects),
        ]
    }
}
