import Foundation
import SaveKit
import TestSupport
import Testing

/// Hostile input must end in a located error, never a crash, a hang or a huge allocation.
@Suite("Hostile input")
struct HostileInputTests {
    /// A small binary plist with a dictionary, an array, strings, numbers, a date and data.
    static let sample: [UInt8] = {
        let value: SaveValue = [
            "name": "Zoë 🎮", "level": 12, "ratio": 0.75, "when": .date(Date(timeIntervalSinceReferenceDate: 700_000_000)),
            "blob": .data(Data([1, 2, 3, 4])), "list": [1, "two", [3.0, true], ["four": .uid(4)]],
        ]
        return try! BinaryPlistCodec().encode(value)
    }()

    @Test func everyTruncationOfABinaryPlistIsRefused() {
        for length in 0..<Self.sample.count {
            #expect(throws: CodecError.self, "first \(length) bytes") { try BinaryPlistCodec().decode(Array(Self.sample[..<length])) }
        }
    }

    /// A binary plist cut short has no trailer at its end: the message says so, rather than
    /// reading whatever bytes are there as sizes.
    @Test func aCutShortBinaryPlistIsCalledThat() throws {
        let cut = Array(Self.sample.prefix(Self.sample.count - 40))
        do {
            _ = try BinaryPlistCodec().decode(cut)
            Issue.record("a cut-short binary plist was read")
        } catch {
            #expect("\(error)".contains("probably cut short or damaged"), "\(error)")
        }
    }

    @Test func everyTruncationOfTextIsRefused() throws {
        let value = try BinaryPlistCodec().decode(Self.sample)
        for codec in [XMLPlistCodec(), JSONCodec()] as [any SaveCodec] {
            let text = try codec.encode(value)
            for length in stride(from: 0, to: text.count - 1, by: 1) {
                // A JSON prefix that is itself a complete value ("1") is valid; any other prefix is not.
                if let accepted = try? codec.decode(Array(text[..<length])) {
                    #expect(!accepted.isContainer, "\(codec.id): \(length) bytes accepted")
                }
            }
        }
    }

    @Test func everySingleByteCorruptionIsHandled() throws {
        // Each byte replaced by a few values: decode must return or throw, never trap.
        for index in 0..<Self.sample.count {
            for replacement: UInt8 in [0x00, 0x0F, 0x7F, 0xFF, Self.sample[index] ^ 0x01] {
                var corrupted = Self.sample
                corrupted[index] = replacement
                if let value = try? BinaryPlistCodec().decode(corrupted) { _ = try? BinaryPlistCodec().encode(value) }
            }
        }
    }

    @Test func deepNestingInEveryCodec() throws {
        let depth = 100_000
        let json = Array(repeating: UInt8(ascii: "["), count: depth) + Array(repeating: UInt8(ascii: "]"), count: depth)
        let xml = Array(("<plist>" + String(repeating: "<array>", count: depth) + String(repeating: "</array>", count: depth) + "</plist>").utf8)
        #expect(throws: CodecError.self) { try JSONCodec().decode(json) }
        #expect(throws: CodecError.self) { try XMLPlistCodec().decode(xml) }
        #expect(throws: CodecError.self) { try BinaryPlistCodec().decode(Self.nestedArrays(depth)) }
        #expect(throws: Never.self) { try BinaryPlistCodec().decode(Self.nestedArrays(511)) }
        // Writers refuse what readers would refuse.
        var deep: SaveValue = "leaf"
        for _ in 0..<600 { deep = [deep] }
        for codec in [JSONCodec(), XMLPlistCodec(), BinaryPlistCodec()] as [any SaveCodec] {
            #expect(throws: CodecError.self, "\(codec.id)") { try codec.encode(deep) }
        }
    }

    /// `depth` one-element arrays, object i referencing object i+1, then a string.
    static func nestedArrays(_ depth: Int) -> [UInt8] {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for index in 0..<depth {
            offsets.append(bytes.count)
            bytes.append(0xA1)
            bytes += withUnsafeBytes(of: UInt32(index + 1).bigEndian, Array.init)
        }
        offsets.append(bytes.count)
        bytes += [0x54] + Array("seed".utf8)
        let table = bytes.count
        for offset in offsets { bytes += withUnsafeBytes(of: UInt32(offset).bigEndian, Array.init) }
        bytes += [0, 0, 0, 0, 0, 0, 4, 4]
        bytes += withUnsafeBytes(of: UInt64(offsets.count).bigEndian, Array.init)
        bytes += withUnsafeBytes(of: UInt64(0).bigEndian, Array.init)
        bytes += withUnsafeBytes(of: UInt64(table).bigEndian, Array.init)
        return bytes
    }

    /// Builds a binary plist from raw objects (1-byte offsets and references).
    static func binaryPlist(_ objects: [[UInt8]], top: UInt64 = 0, declaredCount: UInt64? = nil, offsetSize: UInt8 = 1, referenceSize: UInt8 = 1) -> [UInt8] {
        var bytes = Array("bplist00".utf8)
        var offsets: [Int] = []
        for object in objects { offsets.append(bytes.count); bytes += object }
        let table = bytes.count
        for offset in offsets { bytes.append(UInt8(truncatingIfNeeded: offset)) }
        bytes += [0, 0, 0, 0, 0, 0, offsetSize, referenceSize]
        bytes += withUnsafeBytes(of: (declaredCount ?? UInt64(objects.count)).bigEndian, Array.init)
        bytes += withUnsafeBytes(of: top.bigEndian, Array.init)
        bytes += withUnsafeBytes(of: UInt64(table).bigEndian, Array.init)
        return bytes
    }

    /// UTF-16 text is turned into UTF-8 unit by unit, by the tree reader and by the streaming
    /// one alike: pairs make one scalar, and a surrogate without its partner is refused.
    @Test func utf16TextIsReadAsSwiftReadsIt() throws {
        let texts: [[UInt16]] = [
            [0x005A, 0x006F, 0x00EB], [0x73A9, 0x5BB6], [0xD83C, 0xDF83], [0x0000, 0x007F, 0x0080, 0x07FF, 0x0800, 0xFFFF],
            [0xD800], [0xDC00], [0xD83C, 0x0041], [0x0041, 0xDF83], [0xD83C, 0xD83C, 0xDF83], [0xDBFF, 0xDFFF],
            [0xD7FF, 0xE000], [0xDFFF], [0x0041, 0xD83C],
        ]
        for units in texts {
            let object: [UInt8] = [0x60 | UInt8(units.count)] + units.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }
            let bytes = Self.binaryPlist([[0xA1, 0x01], object])
            let expected = String(validating: units, as: UTF16.self)
            let tree = try? BinaryPlistCodec().decode(bytes)
            #expect(tree == expected.map { [.string($0)] }, "\(units)")
            var json = ByteArrayOutput()
            let streamed = try? Conversion.convert(bytes, from: Codecs.binary, to: Codecs.json, to: &json)
            #expect((streamed != nil) == (expected != nil), "\(units)")
            if let expected, streamed != nil { #expect(try Codecs.json.decode(json.bytes) == [.string(expected)], "\(units)") }
        }
        // A key in UTF-16 takes the same way, and an unpaired one is refused there too.
        let key: [UInt8] = [0x62, 0x73, 0xA9, 0x5B, 0xB6]
        var json = ByteArrayOutput()
        try Conversion.convert(Self.binaryPlist([[0xD1, 0x01, 0x02], key, [0x10, 0x07]]), from: Codecs.binary, to: Codecs.json, to: &json)
        #expect(try Codecs.json.decode(json.bytes) == ["玩家": 7])
        let unpaired: [UInt8] = [0x61, 0xD8, 0x3C]
        #expect(throws: CodecError.self) { try Conversion.convert(Self.binaryPlist([[0xD1, 0x01, 0x02], unpaired, [0x10, 0x07]]), from: Codecs.binary, to: Codecs.json, to: &json) }
        // More than 16 keys, each a UTF-16 string: the other way of checking them for a repeat.
        var objects: [[UInt8]] = [[0xDF, 0x10, 0x11] + Array(1...17) + Array(repeating: 18, count: 17)]
        for index in 0..<17 { objects.append([0x61, 0x73, 0xA9 &+ UInt8(index)]) }
        objects.append([0x10, 0x01])
        json = ByteArrayOutput()
        try Conversion.convert(Self.binaryPlist(objects), from: Codecs.binary, to: Codecs.json, to: &json)
        let keys = (0..<17).map { String(UnicodeScalar(0x73A9 + $0)!) }
        #expect(try Codecs.json.decode(json.bytes).dictionaryValue?.keys.map { $0 } == keys)
        objects[17] = objects[16]  // the last key spelled as the one before it
        #expect(throws: CodecError.self) { try Conversion.convert(Self.binaryPlist(objects), from: Codecs.binary, to: Codecs.json, to: &json) }
    }

    /// The streaming reader does not check a dictionary's keys again when they are the very key
    /// objects of one it has checked: a duplicate key after such dictionaries is still refused.
    @Test func aRepeatedKeyAfterDictionariesOfTheSameKeysIsRefused() throws {
        // 0: [1, 2, 5], 1 and 2: {a: 6, b: 6} with the same key objects, 5: {a: 6, a': 6}
        // where a' is another object of the same bytes, 3: "a", 4: "b", 6: 1, 7: "a" again.
        let objects: [[UInt8]] = [
            [0xA3, 0x01, 0x02, 0x05], [0xD2, 0x03, 0x04, 0x06, 0x06], [0xD2, 0x03, 0x04, 0x06, 0x06],
            [0x51, 0x61], [0x51, 0x62], [0xD2, 0x03, 0x07, 0x06, 0x06], [0x10, 0x01], [0x51, 0x61],
        ]
        let bytes = Self.binaryPlist(objects)
        var json = ByteArrayOutput()
        #expect { try Conversion.convert(bytes, from: Codecs.binary, to: Codecs.json, to: &json) } throws: { error in
            "\(error)".contains("the key \"a\" a second time")
        }
        // The same two good dictionaries alone convert.
        var good = objects
        good[0] = [0xA2, 0x01, 0x02]
        json = ByteArrayOutput()
        try Conversion.convert(Self.binaryPlist(good), from: Codecs.binary, to: Codecs.json, to: &json)
        #expect(try Codecs.json.decode(json.bytes) == [["a": 1, "b": 1], ["a": 1, "b": 1]])
    }

    @Test func craftedBinaryPlists() {
        let cases: [(String, [UInt8])] = [
            ("array containing itself", Self.binaryPlist([[0xA1, 0x00]])),
            ("two arrays referencing each other", Self.binaryPlist([[0xA1, 0x01], [0xA1, 0x00]])),
            ("dictionary whose value is itself", Self.binaryPlist([[0xD1, 0x01, 0x00], [0x51, 0x61]])),
            ("reference past the last object", Self.binaryPlist([[0xA1, 0x09]])),
            ("huge declared array count", Self.binaryPlist([[0xAF, 0x13, 0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]])),
            ("huge declared string length", Self.binaryPlist([[0x5F, 0x13, 0x00, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]])),
            ("negative length", Self.binaryPlist([[0x4F, 0x13, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF]])),
            ("UTF-16 lone surrogate", Self.binaryPlist([[0x61, 0xD8, 0x00]])),
            ("non-ASCII in an ASCII string", Self.binaryPlist([[0x52, 0xC3, 0xA9]])),
            ("top object past the end", Self.binaryPlist([[0x09]], top: 5)),
            ("more objects declared than the table holds", Self.binaryPlist([[0x09]], declaredCount: 1 << 60)),
            ("offset size 9", Self.binaryPlist([[0x09]], offsetSize: 9)),
            ("reference size 0", Self.binaryPlist([[0x09]], referenceSize: 0)),
            ("set marker", Self.binaryPlist([[0xC1, 0x01], [0x09]])),
            ("integer of 32 bytes", Self.binaryPlist([[0x15] + Array(repeating: 0, count: 32)])),
            ("length that is not an integer", Self.binaryPlist([[0x5F, 0x23, 0, 0, 0, 0, 0, 0, 0, 0]])),
        ]
        for (name, bytes) in cases {
            #expect(throws: CodecError.self, "\(name)") { try BinaryPlistCodec().decode(bytes) }
        }
    }

    @Test func sharedReferencesCannotExplode() throws {
        // Object i is an array of two references to object i+1: 2^60 values if expanded.
        var objects: [[UInt8]] = []
        for index in 0..<60 { objects.append([0xA2, UInt8(index + 1), UInt8(index + 1)]) }
        objects.append([0x09])
        #expect(throws: CodecError.self) { try BinaryPlistCodec().decode(Self.binaryPlist(objects)) }
        // A modest amount of legitimate sharing is fine.
        var options = DecodingOptions()
        options.maxExpandedValues = 1 << 12
        var shallowObjects: [[UInt8]] = (0..<10).map { [0xA2, UInt8($0 + 1), UInt8($0 + 1)] }
        shallowObjects.append([0x09])
        let shallow = Self.binaryPlist(shallowObjects)
        #expect(throws: Never.self) { try BinaryPlistCodec().decode(shallow, options: options) }
    }

    @Test func hostileXML() {
        let cases = [
            #"<?xml version="1.0"?><!DOCTYPE plist [<!ENTITY a "aaaaaaaa">]><plist><string>&a;</string></plist>"#,
            "<plist><string>&unknown;</string></plist>",
            "<plist><string>a & b</string></plist>",
            "<plist><dict><key>a</key></dict></plist>",
            "<plist><array><key>a</key></array></plist>",
            "<plist><integer>99999999999999999999</integer></plist>",
            "<plist><integer>-9223372036854775809</integer></plist>",
            "<plist><date>2026-13-01T00:00:00Z</date></plist>",
            "<plist><data>!!!</data></plist>",
            "<plist><real>0x1p3</real></plist>",
            "<plist><string>unclosed",
            "<plist><string>x</string><string>y</string></plist>",
            "<plist><dict><key>a</key><string>1</string><key>a</key><string>2</string></dict></plist>",
            "<plist><string>&#0;</string></plist>",
            "<plist><string>&#xD800;</string></plist>",
        ]
        for text in cases {
            #expect(throws: CodecError.self, "\(text)") { try XMLPlistCodec().decode(Array(text.utf8)) }
        }
        // Invalid UTF-16: an odd byte count, and an unpaired surrogate.
        #expect(throws: CodecError.self) { try XMLPlistCodec().decode([0xFF, 0xFE, 0x3C, 0x00, 0x70]) }
        #expect(throws: CodecError.self) { try XMLPlistCodec().decode([0xFF, 0xFE, 0x3C, 0x00, 0x00, 0xD8]) }
    }

    @Test func errorsNameTheByte() {
        let bytes = Self.binaryPlist([[0xA2, 0x01, 0x07], [0x09]])
        #expect(throws: CodecError.malformed(
            codec: "bplist", at: .byte(10), found: "a reference to object 7", expected: "a reference below 2, the number of objects")
        ) { try BinaryPlistCodec().decode(bytes) }
    }
}

extension HostileInputTests {
    /// Two keys that are the same characters in two Unicode normalisations (`café` composed and
    /// decomposed) are two keys in a file, but one here (keys compare as characters): refused in
    /// every codec, naming both, whatever `--duplicate-keys` says — `last` kept one of them and
    /// dropped the other without a word.
    @Test func keysThatDifferOnlyInNormalisationAreRefusedNeverMerged() throws {
        let (composed, decomposed) = ("caf\u{E9}", "cafe\u{301}")
        var last = DecodingOptions()
        last.duplicateKeys = .last
        let json = Array(#"{"caf\u00e9": 1, "cafe\u0301": 2}"#.utf8)
        let xml = Array("<?xml version=\"1.0\" encoding=\"UTF-8\"?><plist version=\"1.0\"><dict><key>\(composed)</key><integer>1</integer><key>\(decomposed)</key><integer>2</integer></dict></plist>".utf8)
        var binary: [UInt8] = []
        for options in [DecodingOptions(), last] {
            for (codec, bytes) in [(Codecs.json as any SaveCodec, json), (Codecs.xml, xml)] {
                #expect(throws: CodecError.self, "\(codec.id)") { _ = try codec.decode(bytes, options: options) }
                do { _ = try codec.decode(bytes, options: options) } catch { #expect("\(error)".contains("another Unicode normalisation"), "\(error)") }
            }
        }
        // A binary plist of both, written as Python's plistlib writes it (UTF-16 keys).
        binary = Array("bplist00".utf8)
        let objects: [[UInt8]] = [
            [0xD2, 1, 2, 3, 4],
            [0x64] + Array(composed.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }),
            [0x65] + Array(decomposed.utf16.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xFF)] }),
            [0x10, 1], [0x10, 2],
        ]
        var offsets: [UInt8] = []
        for object in objects { offsets.append(UInt8(binary.count)); binary += object }
        let table = binary.count
        binary += offsets + [0, 0, 0, 0, 0, 0, 1, 1] + withUnsafeBytes(of: UInt64(objects.count).bigEndian, Array.init)
            + withUnsafeBytes(of: UInt64(0).bigEndian, Array.init) + withUnsafeBytes(of: UInt64(table).bigEndian, Array.init)
        for options in [DecodingOptions(), last] {
            do {
                _ = try Codecs.binary.decode(binary, options: options)
                Issue.record("a binary plist of both keys read")
            } catch {
                #expect("\(error)".contains("another Unicode normalisation"), "\(error)")
            }
        }
        var output = ByteArrayOutput()
        #expect(throws: CodecError.self) { try Conversion.convert(binary, from: Codecs.binary, to: Codecs.json, to: &output) }
    }
}
