import Foundation

/// RFC 3339 timestamps in UTC, written with exactly as many fractional digits as it takes to
/// give back the same `Date` (none for whole seconds).
///
/// Written by hand rather than with `ISO8601DateFormatter`: that formatter rounds to
/// milliseconds (losing what a plist date holds), and converting through the calendar for
/// every date of a 50 MB save costs more than the rest of the conversion.
public enum RFC3339 {
    /// Seconds between 1970-01-01 and 2001-01-01, the reference date of property lists.
    static let unixToReference: Int64 = 978_307_200

    /// Whether the date has a year from 0001 to 9999, the range the text form can spell.
    public static func isInRange(_ date: Date) -> Bool {
        let seconds = date.timeIntervalSinceReferenceDate
        return seconds.isFinite && seconds >= -63_113_904_000 && seconds < 252_423_993_600
    }

    /// Whether the text form gives back exactly this date: a year from 0001 to 9999, and a
    /// fraction of a second that 17 decimal digits can spell (not one of 5e-312 s).
    public static func isRepresentable(_ date: Date) -> Bool {
        guard isInRange(date) else { return false }
        let seconds = date.timeIntervalSinceReferenceDate
        let whole = seconds.rounded(.down)
        return seconds == whole || shortestFraction(seconds - whole, whole: whole, target: seconds) != nil
    }

    /// `2026-11-21T08:00:00Z`, or `2026-11-21T08:00:00.25Z` when there is a fraction; the
    /// seconds since 2001 as a number when the date is not ``isRepresentable(_:)``.
    public static func format(_ date: Date) -> String {
        var text = ChunkedBuffer(output: ByteArrayOutput(capacity: 64), chunkSize: 64)
        guard write(date, into: &text) else { return date.timeIntervalSinceReferenceDate.description }
        try? text.flush()  // memory output: cannot fail
        return String(decoding: text.output.bytes, as: UTF8.self)
    }

    /// Writes the ``format(_:)`` text into a writer's buffer, without intermediate strings;
    /// writes nothing and returns `false` when the date is not ``isRepresentable(_:)``.
    @discardableResult
    static func write<Output>(_ date: Date, into text: inout ChunkedBuffer<Output>) -> Bool {
        guard isInRange(date) else { return false }
        let seconds = date.timeIntervalSinceReferenceDate
        let whole = seconds.rounded(.down)
        let fraction = seconds - whole
        var fractionText: String? = nil
        if fraction != 0 {
            fractionText = shortestFraction(fraction, whole: whole, target: seconds)
            if fractionText == nil { return false }
        }
        let (year, month, day, secondOfDay) = civil(fromUnixSeconds: Int64(whole) + unixToReference)
        text.appendPadded(year, width: 4)
        text.append(UInt8(ascii: "-"))
        text.appendPadded(month, width: 2)
        text.append(UInt8(ascii: "-"))
        text.appendPadded(day, width: 2)
        text.append(UInt8(ascii: "T"))
        text.appendPadded(secondOfDay / 3600, width: 2)
        text.append(UInt8(ascii: ":"))
        text.appendPadded(secondOfDay / 60 % 60, width: 2)
        text.append(UInt8(ascii: ":"))
        text.appendPadded(secondOfDay % 60, width: 2)
        if let fractionText { text.append(fractionText) }
        text.append(UInt8(ascii: "Z"))
        return true
    }

    /// Appends a time given as whole seconds since 1970 and nanoseconds, exactly, as
    /// `2026-11-21T08:00:00Z` or `2026-11-21T08:00:00.123456789Z` (trailing zeros of the
    /// fraction left out): what a bundle's manifest writes for every file.
    public static func appendUnixTime(seconds: Int64, nanoseconds: Int32, to bytes: inout [UInt8]) {
        // Laid out in a buffer on the stack and appended once: an append per digit was most
        // of what a manifest entry cost to write.
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 32) { text in
            var end = 0
            func put(_ byte: UInt8) {
                text[end] = byte
                end += 1
            }
            func padded(_ value: Int, width: Int) {
                var rest = value
                for index in stride(from: end + width - 1, through: end, by: -1) {
                    text[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: rest % 10)
                    rest /= 10
                }
                end += width
            }
            let (year, month, day, secondOfDay) = civil(fromUnixSeconds: seconds)
            padded(year, width: 4)
            put(UInt8(ascii: "-"))
            padded(month, width: 2)
            put(UInt8(ascii: "-"))
            padded(day, width: 2)
            put(UInt8(ascii: "T"))
            padded(secondOfDay / 3600, width: 2)
            put(UInt8(ascii: ":"))
            padded(secondOfDay / 60 % 60, width: 2)
            put(UInt8(ascii: ":"))
            padded(secondOfDay % 60, width: 2)
            end += fraction(nanoseconds: nanoseconds, into: UnsafeMutableBufferPointer(rebasing: text[end...]))
            put(UInt8(ascii: "Z"))
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[..<end]))
        }
    }

    /// Appends `.` and the nanoseconds as a fraction of a second without its trailing zeros
    /// (`.5`, `.000000005`); nothing for none.
    public static func appendFraction(nanoseconds: Int32, to bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 10) { text in
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: text[..<fraction(nanoseconds: nanoseconds, into: text)]))
        }
    }

    /// Writes what ``appendFraction(nanoseconds:to:)`` appends at the start of `text` (room
    /// for 10 bytes); returns how many bytes it wrote.
    private static func fraction(nanoseconds: Int32, into text: UnsafeMutableBufferPointer<UInt8>) -> Int {
        guard nanoseconds > 0 && nanoseconds < 1_000_000_000 else { return 0 }
        var fraction = Int(nanoseconds)
        var digits = 9
        while fraction % 10 == 0 {
            fraction /= 10
            digits -= 1
        }
        text[0] = UInt8(ascii: ".")
        for index in stride(from: digits, through: 1, by: -1) {
            text[index] = UInt8(ascii: "0") + UInt8(truncatingIfNeeded: fraction % 10)
            fraction /= 10
        }
        return digits + 1
    }

    /// Parses `YYYY-MM-DDTHH:MM:SS[.fraction](Z|±HH:MM)`; `nil` when the text is not such a timestamp.
    public static func parse(_ text: String) -> Date? {
        guard let (unix, fraction) = fields(Array(text.utf8)) else { return nil }
        var seconds = Double(unix - unixToReference)
        if !fraction.isEmpty, let value = Double("0." + String(decoding: fraction, as: UTF8.self)) { seconds += value }
        return Date(timeIntervalSinceReferenceDate: seconds)
    }

    /// The same text as ``parse(_:)`` as whole seconds since 1970 and nanoseconds, exactly (no
    /// `Double` in between); `nil` also when the fraction has more than nine digits.
    public static func parseUnixTime(_ text: String) -> (seconds: Int64, nanoseconds: Int32)? {
        var text = text
        return text.withUTF8(parseUnixTime(bytes:))
    }

    /// ``parseUnixTime(_:)`` of UTF-8 bytes (a manifest's times, read without making strings).
    public static func parseUnixTime(bytes: UnsafeBufferPointer<UInt8>) -> (seconds: Int64, nanoseconds: Int32)? {
        guard let (unix, fraction) = fields(bytes), let nanoseconds = nanoseconds(fraction: fraction) else { return nil }
        return (unix, nanoseconds)
    }

    /// The nanoseconds that the digits after a decimal point spell (`5` is 500,000,000); `nil`
    /// for more than nine digits or a byte that is not a digit. What ``appendFraction(nanoseconds:to:)``
    /// writes, read back.
    public static func nanoseconds<Digits: Collection>(fraction digits: Digits) -> Int32? where Digits.Element == UInt8 {
        guard digits.count <= 9 else { return nil }
        var nanoseconds: Int32 = 0
        for digit in digits {
            guard digit &- 48 < 10 else { return nil }
            nanoseconds = nanoseconds * 10 + Int32(digit - 48)
        }
        for _ in digits.count..<9 { nanoseconds *= 10 }
        return nanoseconds
    }

    /// The seconds since 1970 and the fraction's digits; works on bytes because it runs for
    /// every timestamp of a manifest.
    private static func fields<Bytes: RandomAccessCollection>(_ bytes: Bytes) -> (unix: Int64, fraction: Bytes.SubSequence)?
    where Bytes.Element == UInt8, Bytes.Index == Int {
        let base = bytes.startIndex
        guard bytes.count >= 20 else { return nil }
        func byte(_ offset: Int) -> UInt8 { bytes[base + offset] }
        func number(_ start: Int, _ count: Int) -> Int? {
            var value = 0
            for offset in start..<(start + count) {
                let digit = Int(byte(offset)) - 48
                guard digit >= 0 && digit <= 9 else { return nil }
                value = value * 10 + digit
            }
            return value
        }
        guard byte(4) == 0x2D, byte(7) == 0x2D, byte(10) | 0x20 == 0x74, byte(13) == 0x3A, byte(16) == 0x3A,  // 't' and 'T' alike
            let year = number(0, 4), let month = number(5, 2), let day = number(8, 2),
            let hour = number(11, 2), let minute = number(14, 2), let second = number(17, 2),
            (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
            hour < 24, minute < 60, second < 60
        else { return nil }
        var offset = 19
        var fraction = bytes[(base + 19)..<(base + 19)]
        if byte(offset) == 0x2E {
            offset += 1
            let start = offset
            while offset < bytes.count, byte(offset) >= 0x30, byte(offset) <= 0x39 { offset += 1 }
            guard offset > start else { return nil }
            fraction = bytes[(base + start)..<(base + offset)]
        }
        guard offset < bytes.count else { return nil }
        var zone = 0
        switch byte(offset) | 0x20 {
        case 0x7A:  // z
            offset += 1
        case 0x2B | 0x20, 0x2D | 0x20:  // + -
            guard bytes.count == offset + 6, byte(offset + 3) == 0x3A,
                let zoneHours = number(offset + 1, 2), let zoneMinutes = number(offset + 4, 2),
                zoneHours < 24, zoneMinutes < 60
            else { return nil }
            zone = (zoneHours * 3600 + zoneMinutes * 60) * (byte(offset) == 0x2D ? -1 : 1)
            offset += 6
        default:
            return nil
        }
        guard offset == bytes.count else { return nil }
        let days = daysFromCivil(year: year, month: month, day: day)
        return (days * 86_400 + Int64(hour * 3600 + minute * 60 + second - zone), fraction)
    }

    // MARK: - Calendar arithmetic (proleptic Gregorian; H. Hinnant's days-from-civil algorithms)

    static func civil(fromUnixSeconds unix: Int64) -> (year: Int, month: Int, day: Int, secondOfDay: Int) {
        var days = unix / 86_400
        var secondOfDay = unix % 86_400
        if secondOfDay < 0 { secondOfDay += 86_400; days -= 1 }
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (Int(year), Int(month), Int(day), Int(secondOfDay))
    }

    static func daysFromCivil(year: Int, month: Int, day: Int) -> Int64 {
        let y = Int64(month <= 2 ? year - 1 : year)
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: (year % 4 == 0 && year % 100 != 0) || year % 400 == 0 ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    /// `.5`, `.123456`: the fewest digits (at most 17) that parse back to exactly `target`.
    private static func shortestFraction(_ fraction: Double, whole: Double, target: Double) -> String? {
        // Digits made by hand: `String(format:)` for each length tried was a server's hot spot
        // (every version's record holds a time).
        var power = 1.0
        for digits in 1...17 {
            power *= 10
            let scaled = (fraction * power).rounded()
            // A fraction that rounds up to a whole second has no text of this length.
            guard scaled < power else { continue }
            let number = String(Int64(scaled))
            let text = "0." + String(repeating: "0", count: digits - number.count) + number
            guard let parsed = Double(text) else { continue }
            if whole + parsed == target { return String(text.dropFirst()) }
        }
        return nil
    }
}
