#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// File names as the file system holds them, in a `String`, even when they are not UTF-8.
///
/// Linux names are bytes: a file copied from an old Latin-1 system can be called `caf\xE9.json`,
/// which no `String` can hold. Such a name is carried with each byte that is not part of valid
/// UTF-8 written as one private-use character, U+EF80 + (byte − 0x80), the convention of
/// MirOS's OPTU-8: `caf\u{EFE9}.json`. A valid name that holds one of those 128 characters has
/// the bytes of each written the same way, so every name maps to exactly one string and back
/// (``bytes(of:)`` of ``string(_:)`` is the name, byte for byte).
///
/// Only bytes 0x80–0xFF are ever written so: a string of this form can never smuggle a `/`,
/// a `.` or a NUL into a name, whatever a bundle's manifest says. Paths of this form go to the
/// system through ``withSystemPath(_:_:)``, and to people through ``shown(_:)``.
public enum ExactFileName {
    private static let first: UInt32 = 0xEF80, last: UInt32 = 0xEFFF

    /// The name or path `bytes` as a string: itself when it is UTF-8 without the escape range
    /// (almost always, and checked in one pass), escaped otherwise.
    public static func string(_ bytes: some Collection<UInt8>) -> String {
        if let plain = String(validating: bytes, as: UTF8.self), !mayHoldEscapes(plain) { return plain }
        let bytes = Array(bytes)
        var result = String.UnicodeScalarView()
        var index = 0
        while index < bytes.count {
            if let (scalar, length) = scalar(at: index, in: bytes), !(first...last).contains(scalar.value) {
                result.append(scalar)  // ASCII included: it is always valid
                index += length
            } else {
                result.append(Unicode.Scalar(first + UInt32(bytes[index] - 0x80))!)
                index += 1
            }
        }
        return String(result)
    }

    /// ``string(_:)`` of an array, checked in place: the generic form, not specialised across
    /// modules, cost an export more than the rest of reading a folder's names.
    public static func string(_ bytes: [UInt8]) -> String {
        let plain = bytes.withUnsafeBufferPointer { buffer -> String? in
            if isASCII(UnsafeRawBufferPointer(buffer)) { return String(decoding: buffer, as: UTF8.self) }  // nothing to check
            if memchr(buffer.baseAddress!, 0xEE, buffer.count) != nil { return nil }
            return String(validating: buffer, as: UTF8.self)
        }
        return plain ?? string(bytes[...])
    }

    /// Whether every byte is ASCII: a name that is needs no validation and no conversion.
    public static func isASCII(_ bytes: UnsafeRawBufferPointer) -> Bool {
        var high: UInt8 = 0
        for byte in bytes { high |= byte }
        return high < 0x80
    }

    /// `folder`, a slash and `name`, in one allocation (a `+` for each part cost two).
    public static func path(_ folder: String, _ name: String) -> String {
        var folder = folder, name = name
        return folder.withUTF8 { head in
            name.withUTF8 { tail in
                String(unsafeUninitializedCapacity: head.count + 1 + tail.count) { bytes in
                    _ = UnsafeMutableBufferPointer(rebasing: bytes[..<head.count]).initialize(from: head)
                    bytes[head.count] = UInt8(ascii: "/")
                    _ = UnsafeMutableBufferPointer(rebasing: bytes[(head.count + 1)...]).initialize(from: tail)
                    return bytes.count
                }
            }
        }
    }

    /// A name read as UTF-8 (from an archive, say), as ``string(_:)`` carries its bytes.
    public static func carried(_ name: String) -> String {
        mayHoldEscapes(name) ? string(Array(name.utf8)) : name
    }

    /// The bytes the file system holds for `name`, a string from ``string(_:)``.
    public static func bytes(of name: String) -> [UInt8] {
        guard mayHoldEscapes(name) else { return Array(name.utf8) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(name.utf8.count)
        for scalar in name.unicodeScalars {
            if (first...last).contains(scalar.value) {
                bytes.append(UInt8(scalar.value - first + 0x80))
            } else {
                bytes.append(contentsOf: String(scalar).utf8)
            }
        }
        return bytes
    }

    /// Calls `body` with `path` as the system takes it (NUL-terminated bytes).
    public static func withSystemPath<Result>(_ path: String, _ body: (UnsafePointer<CChar>) throws -> Result) rethrows -> Result {
        guard mayHoldEscapes(path) else { return try path.withCString(body) }
        var bytes = bytes(of: path)
        bytes.append(0)
        var failure: Int32 = 0
        let result = try bytes.withUnsafeBufferPointer { buffer in
            let result = try buffer.withMemoryRebound(to: CChar.self) { try body($0.baseAddress!) }
            failure = errno
            return result
        }
        errno = failure  // the call's error, whatever freeing the bytes does to errno
        return result
    }

    /// `text` with each escaped byte written as `\xE9`, for messages.
    public static func shown(_ text: String) -> String {
        guard mayHoldEscapes(text) else { return text }
        var result = ""
        for scalar in text.unicodeScalars {
            if (first...last).contains(scalar.value) {
                let byte = scalar.value - first + 0x80
                result += "\\x" + String(byte, radix: 16, uppercase: true)
            } else {
                result.unicodeScalars.append(scalar)
            }
        }
        return result
    }

    /// Whether `name` is the one spelling ``string(_:)`` gives its bytes: not, for instance,
    /// `\u{EFC3}\u{EFA9}`, escapes of the bytes of `é`, which are UTF-8.
    public static func isCanonical(_ name: String) -> Bool {
        !mayHoldEscapes(name) || string(bytes(of: name)).utf8.elementsEqual(name.utf8)
    }

    /// Whether the bytes `name` stands for are not UTF-8.
    public static func isNotUTF8(_ name: String) -> Bool {
        mayHoldEscapes(name) && String(validating: bytes(of: name), as: UTF8.self) == nil
    }

    /// A name as one line, for messages and listings: control characters and backslashes
    /// escaped (`\n`, `\t`, `\x1B`, `\\`), as `ls -b` shows them, so that a name holding a
    /// newline or a terminal's escape cannot pass for two lines or recolour one; bytes that are
    /// not UTF-8 as `\xE9` (``shown(_:)``).
    public static func printable(_ name: String) -> String {
        escaped(name, backslashes: true)
    }

    /// A message that holds names as one line: as ``printable(_:)`` shows them, but with
    /// backslashes left as they are (the message's own `\xE9`s, or a name it quotes already
    /// escaped). A bundle's entry cannot put a line of its own, or a terminal's escape, on
    /// standard error through a message.
    public static func oneLine(_ message: String) -> String {
        escaped(message, backslashes: false)
    }

    private static func escaped(_ text: String, backslashes: Bool) -> String {
        shown(text.escapingControlCharacters(backslashes: backslashes))
    }

    /// How many bytes `path` takes on the file system.
    public static func systemLength(of path: String) -> Int {
        mayHoldEscapes(path) ? bytes(of: path).count : path.utf8.count
    }

    /// Whether `text` is not sure to be free of escapes: their UTF-8 starts with 0xEE.
    @inline(__always)
    public static func mayHoldEscapes(_ text: String) -> Bool {
        // memchr over a native string's bytes: this runs for every name an export or an
        // import meets, several times (the generic `contains` was 0.8% of an export's samples).
        if let found = text.utf8.withContiguousStorageIfAvailable({ $0.isEmpty ? false : memchr($0.baseAddress!, 0xEE, $0.count) != nil }) {
            return found
        }
        return text.utf8.contains(0xEE)
    }

    /// The scalar that valid UTF-8 at `index` encodes, with its length; `nil` when the bytes
    /// there are not valid UTF-8 (a stray continuation, an overlong form, a surrogate, a
    /// sequence cut short or beyond U+10FFFF).
    private static func scalar(at index: Int, in bytes: [UInt8]) -> (Unicode.Scalar, Int)? {
        let lead = bytes[index]
        let length: Int, minimum: UInt32
        var value: UInt32
        switch lead {
        case 0x00..<0x80: return (Unicode.Scalar(lead), 1)
        case 0xC2..<0xE0: (length, minimum, value) = (2, 0x80, UInt32(lead & 0x1F))
        case 0xE0..<0xF0: (length, minimum, value) = (3, 0x800, UInt32(lead & 0x0F))
        case 0xF0..<0xF5: (length, minimum, value) = (4, 0x10000, UInt32(lead & 0x07))
        default: return nil
        }
        guard index + length <= bytes.count else { return nil }
        for offset in 1..<length {
            let byte = bytes[index + offset]
            guard byte & 0xC0 == 0x80 else { return nil }
            value = value << 6 | UInt32(byte & 0x3F)
        }
        guard value >= minimum, let scalar = Unicode.Scalar(value) else { return nil }  // Scalar refuses surrogates and > U+10FFFF
        return (scalar, length)
    }
}
