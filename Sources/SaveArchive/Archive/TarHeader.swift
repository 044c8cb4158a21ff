/// The ustar header of a plain entry, made here instead of by libarchive.
///
/// libarchive's pax writer clones the entry and converts its names through the locale for each
/// header: 10% of all samples of a 100,000-file export, a sixth of the thread that reads the
/// files. Most entries of a save folder are plain: a name and a link target in ASCII that fit
/// ustar's 100 bytes, no extended attributes, a size that fits 11 octal digits, a time from
/// 1970 to 2038. For those, libarchive writes a bare ustar header (no pax records: "restricted"
/// pax adds them only when needed, and a time's nanoseconds are not among those needs), and
/// this writes the same bytes; a test checks both on generated entries. Anything else is
/// `nil`, left to libarchive.
enum TarHeader {
    static let blockSize = 512

    static func ustar(for info: ArchiveEntryInfo) -> [UInt8]? {
        guard info.xattrs.isEmpty, !info.path.isEmpty, let seconds = seconds(of: info), (0..<latestTime).contains(seconds) else { return nil }
        let typeflag: UInt8, size: Int64
        var linkName = ""
        var directory = false
        switch info.kind {
        case .file:
            (typeflag, size) = (UInt8(ascii: "0"), info.size ?? 0)
        case .directory:
            (typeflag, size, directory) = (UInt8(ascii: "5"), 0, true)
        case .symbolicLink(let target):
            (typeflag, size, linkName) = (UInt8(ascii: "2"), 0, target)
        case .hardLink(let target):
            (typeflag, size, linkName) = (UInt8(ascii: "1"), 0, target)
        case .special:
            return nil
        }
        guard (0..<largestSize).contains(size) else { return nil }

        var path = info.path
        var header = template
        let plainNames = header.withUnsafeMutableBufferPointer { field in
            path.withUTF8 { name in
                // A directory's name ends with a slash, which counts.
                let slash = directory && name.last != UInt8(ascii: "/")
                guard plain(name, room: slash ? 99 : 100) else { return false }
                _ = UnsafeMutableBufferPointer(rebasing: field[0..<name.count]).initialize(from: name)
                if slash { field[name.count] = UInt8(ascii: "/") }
                return linkName.isEmpty || linkName.withUTF8 { link in
                    guard plain(link, room: 100) else { return false }
                    _ = UnsafeMutableBufferPointer(rebasing: field[157..<157 + link.count]).initialize(from: link)
                    return true
                }
            }
        }
        guard plainNames else { return nil }
        header.withUnsafeMutableBufferPointer { field in
            octal(Int64(info.permissions & 0o7777), digits: 6, at: 100, in: field)
            octal(size, digits: 11, at: 124, in: field)
            octal(seconds, digits: 11, at: 136, in: field)
            field[156] = typeflag
            setChecksum(field)
        }
        return header
    }

    /// Puts `size` in the ustar header that ends `records` (libarchive's, made with size 0),
    /// with the checksum that goes with it.
    static func setSize(_ size: Int64, inLastRecordOf records: inout [UInt8]) {
        records.withUnsafeMutableBufferPointer { all in
            let field = UnsafeMutableBufferPointer(rebasing: all[(all.count - blockSize)...])
            octal(size, digits: 11, at: 124, in: field)
            for index in 148..<156 { field[index] = UInt8(ascii: " ") }
            setChecksum(field)
        }
    }

    /// The checksum is the sum of the header's bytes with its own field as spaces (as the
    /// template has it): six octal digits, a NUL, and the last space left.
    private static func setChecksum(_ field: UnsafeMutableBufferPointer<UInt8>) {
        // Wrapping adds, which the compiler turns into vector adds: 512 bytes cannot overflow
        // 32 bits, and a checked sum of Int64s cost 4% of an export's instructions.
        var sum: UInt32 = 0
        for byte in field { sum &+= UInt32(byte) }
        octal(Int64(sum), digits: 6, at: 148, in: field)
        field[154] = 0
    }

    /// 8^11: the first size eleven octal digits cannot hold (libarchive then adds a pax `size`).
    static let largestSize: Int64 = 1 << 33
    /// The first time libarchive gives a pax `mtime` record, though the field could hold more.
    private static let latestTime = Int64(Int32.max)

    /// What libarchive is given as the entry's time, in whole seconds (``ArchiveWriter``).
    private static func seconds(of info: ArchiveEntryInfo) -> Int64? {
        // Nanoseconds out of range are carried into the seconds by libarchive: left to it.
        if let timestamp = info.timestamp { return (0..<1_000_000_000).contains(timestamp.nanoseconds) ? timestamp.seconds : nil }
        if let modified = info.modified {
            let seconds = modified.timeIntervalSince1970.rounded(.down)
            return seconds.magnitude < 1e15 ? Int64(seconds) : nil
        }
        return 0
    }

    /// A name ustar holds as it is in `room` bytes: ASCII, none of it NUL, and not empty.
    private static func plain(_ name: UnsafeBufferPointer<UInt8>, room: Int) -> Bool {
        guard (1...room).contains(name.count) else { return false }
        var outside: UInt8 = 0  // any byte above ASCII, or a NUL, shows here
        for byte in name { outside |= (byte & 0x80) | (byte == 0 ? 0x80 : 0) }
        return outside == 0
    }

    private static func octal(_ value: Int64, digits: Int, at offset: Int, in field: UnsafeMutableBufferPointer<UInt8>) {
        var value = value
        for index in stride(from: offset + digits - 1, through: offset, by: -1) {
            field[index] = UInt8(ascii: "0") + UInt8(value & 7)
            value >>= 3
        }
    }

    /// libarchive's ustar template: zero-padded octal fields ended by a space and a NUL (mode,
    /// owner, group, device) or a space (size, time), the checksum as spaces, `ustar\0` `00`,
    /// and no owner or group names.
    private static let template: [UInt8] = {
        var header = [UInt8](repeating: 0, count: blockSize)
        func put(_ text: String, at offset: Int) { for (index, byte) in text.utf8.enumerated() { header[offset + index] = byte } }
        for offset in [100, 108, 116, 329, 337] { put("000000 ", at: offset) }  // mode, uid, gid, devmajor, devminor
        for offset in [124, 136] { put("00000000000 ", at: offset) }  // size, mtime
        put("        ", at: 148)  // checksum
        put("0", at: 156)  // typeflag
        put("ustar", at: 257)  // magic, NUL-terminated
        put("00", at: 263)  // version
        return header
    }()
}
