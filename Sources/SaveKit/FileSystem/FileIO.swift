#if canImport(Glibc)
import Glibc
private let systemRead = Glibc.read
private let systemWrite = Glibc.write
/// What `opendir` and `fdopendir` give.
private typealias DirectoryStream = OpaquePointer
#elseif canImport(Darwin)
import Darwin
private let systemRead = Darwin.read
private let systemWrite = Darwin.write
private typealias DirectoryStream = UnsafeMutablePointer<DIR>
#endif

/// Whole-file reads and crash-safe writes.
///
/// Writes go to a temporary file in the destination's own directory, are flushed to disk, and
/// are then renamed over the destination: a crash or a full disk leaves either the old file or
/// the new one, never half of one.
public enum FileIO {
    /// The most read from an input whose size is not known first (a pipe, a device, standard
    /// input). A regular file is read whatever its size: it has one, and it is read into an
    /// array of exactly that size.
    public static let unsizedInputLimit = 1 << 30

    /// The whole contents of a regular file; `-` reads standard input.
    public static func read(_ path: String) throws(FileError) -> [UInt8] {
        try readFile(path).bytes
    }

    /// The whole contents of a regular file and its permission bits (0644 for standard input or a pipe),
    /// from the one `fstat` the read needs anyway: for writing its replacement with the same mode.
    public static func readFile(_ path: String) throws(FileError) -> (bytes: [UInt8], mode: mode_t) {
        let descriptor: Int32
        if path == "-" {
            descriptor = STDIN_FILENO
        } else {
            descriptor = open(path, O_RDONLY | O_CLOEXEC)
            guard descriptor >= 0 else { throw .unreadable(path: path, reason: FileError.reason(errno)) }
        }
        defer { if path != "-" { close(descriptor) } }
        var info = stat()
        let described = fstat(descriptor, &info) == 0
        if described, info.st_mode & S_IFMT == S_IFDIR {
            throw .unreadable(path: path, reason: FileError.reason(EISDIR))
        }
        // A regular file's own bits; a pipe's or terminal's are no file's to keep.
        let mode = described && path != "-" && info.st_mode & S_IFMT == S_IFREG ? info.st_mode & 0o7777 : 0o644
        // A regular file is read straight into an array of its size; a pipe, in chunks.
        if info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 {
            let size = Int(info.st_size)
            var failure: Int32 = 0
            var contents = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
                while initialized < size {
                    let count = systemRead(descriptor, buffer.baseAddress! + initialized, size - initialized)
                    if count < 0 && errno == EINTR { continue }
                    if count < 0 { failure = errno; return }
                    if count == 0 { return }  // the file shrank while we read it
                    initialized += count
                }
            }
            if failure != 0 { throw .ioFailure(path: path, operation: "reading", reason: FileError.reason(failure)) }
            // The file may also have grown: read on to its end (bounded, for one that never ends).
            try readRest(descriptor, path: path, into: &contents, limit: size + unsizedInputLimit)
            return (contents, mode)
        }
        var contents: [UInt8] = []
        try readRest(descriptor, path: path, into: &contents, limit: unsizedInputLimit)
        return (contents, mode)
    }

    private static func readRest(_ descriptor: Int32, path: String, into contents: inout [UInt8], limit: Int = .max) throws(FileError) {
        // Almost always the file has not grown: one small read on the stack says so, where a
        // 64 KiB buffer made for every file of a batch was a malloc and a memset each.
        var probe: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        while true {
            let count = withUnsafeMutableBytes(of: &probe) { systemRead(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return }
            if count < 0 {
                if errno == EINTR { continue }
                throw .ioFailure(path: path, operation: "reading", reason: FileError.reason(errno))
            }
            withUnsafeBytes(of: &probe) { contents.append(contentsOf: $0[..<count]) }
            break
        }
        var chunk = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = chunk.withUnsafeMutableBytes { systemRead(descriptor, $0.baseAddress, $0.count) }
            if count == 0 { return }
            if count < 0 {
                if errno == EINTR { continue }
                throw .ioFailure(path: path, operation: "reading", reason: FileError.reason(errno))
            }
            guard contents.count + count <= limit else { throw .tooLarge(path: path, limit: limit) }
            contents.append(contentsOf: chunk[..<count])
        }
    }

    /// Replaces `path` with `bytes` atomically; `-` writes standard output.
    ///
    /// The new file keeps the permission bits, owner and group of the file it replaces (0666
    /// less the umask for a new file), or takes `mode` when one is given. With `durable: false`
    /// the file is renamed into place without being flushed first: still never half-written for
    /// readers, but a power cut may lose it — for batches that flush the whole file system once
    /// at the end.
    public static func writeAtomically(_ bytes: [UInt8], to path: String, durable: Bool = true, mode: mode_t? = nil, links: LinkPolicy = .replace) throws(FileError) {
        let output = try AtomicFileOutput(path: path, durable: durable, mode: mode, links: links)
        do {
            try bytes.withUnsafeBytes { try output.write($0) }
        } catch let error as FileError {
            output.abort()
            throw error
        } catch {
            output.abort()
            throw .ioFailure(path: path, operation: "writing", reason: "\(error)")
        }
        try output.commit()
    }

    /// Calls `body` with each piece of what `descriptor` holds from its offset to its end, read
    /// into one buffer of 1 MiB: memory does not grow with the file. A failed read throws
    /// ``FileError/ioFailure(path:operation:reason:)`` naming `path`.
    ///
    /// With `size`, reading stops once that many bytes have come, without the read that would
    /// find the end: the caller, which knows the size from `stat`, checks that the file kept it.
    public static func readChunks(of descriptor: Int32, path: String, size: Int64? = nil, _ body: (UnsafeRawBufferPointer) throws -> Void) throws {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: Int(min(1 << 20, max(1, size ?? 1 << 20))), alignment: 16)
        defer { buffer.deallocate() }
        var remaining = size ?? Int64.max
        while remaining > 0 {
            let count = systemRead(descriptor, buffer.baseAddress, Int(min(Int64(buffer.count), remaining)))
            if count == 0 { return }
            if count < 0 {
                if errno == EINTR { continue }
                throw FileError.ioFailure(path: path, operation: "reading", reason: FileError.reason(errno))
            }
            remaining -= Int64(count)
            try body(UnsafeRawBufferPointer(rebasing: buffer[..<count]))
        }
    }

    /// One `read` into `buffer`: the count, 0 at the end, -1 with `errno` set.
    static func readSome(_ descriptor: Int32, into buffer: UnsafeMutableRawBufferPointer) -> Int {
        systemRead(descriptor, buffer.baseAddress, buffer.count)
    }

    /// Writes every byte of `bytes`, retrying interrupted and partial writes.
    /// Returns 0, or the `errno` of the write that failed.
    public static func writeAll(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32) -> Int32 {
        var written = 0
        while written < bytes.count {
            let count = systemWrite(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if count < 0 {
                if errno == EINTR { continue }
                return errno
            }
            written += count
        }
        return 0
    }

    /// Creates a new empty file with a unique name beside `destination`
    /// (`.<name>.savetool-XXXXXX`), on the same file system so that it can be renamed over it.
    public static func makeTemporaryFile(beside destination: String) throws(FileError) -> (descriptor: Int32, path: String) {
        var template = temporaryTemplate(beside: destination)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw .cannotCreate(path: destination, reason: FileError.reason(errno)) }
        return (descriptor, string(fromTemplate: template))
    }

    /// Whether `path` names a device, a FIFO or a socket: a file that output is written into,
    /// or refused by, but never renamed over. A link is none, whatever it leads to: whether a
    /// write goes through it is its ``LinkPolicy``'s to say.
    public static func isSpecialFile(_ path: String) -> Bool {
        var info = stat()
        return lstat(path, &info) == 0 && isSpecialType(info.st_mode)
    }

    /// Whether a mode is that of a device, a FIFO or a socket.
    public static func isSpecialType(_ mode: mode_t) -> Bool {
        let type = mode & S_IFMT
        return type == S_IFCHR || type == S_IFBLK || type == S_IFIFO || type == S_IFSOCK
    }

    /// Whether a new file can be written unnamed and named once whole (O_TMPFILE, linked in
    /// through /proc/self/fd): Linux with /proc mounted. Elsewhere, a temporary name is renamed.
    static let namesUnnamedFiles: Bool = {
        #if os(Linux)
        return access("/proc/self/fd", X_OK) == 0
        #else
        return false
        #endif
    }()

    /// Where a write to `path` lands under `links` (see ``LinkPolicy``): `path` itself, or the
    /// file its symbolic links lead to (which need not exist yet), as a shell's `>` writes.
    public static func destination(of path: String, links: LinkPolicy) throws(FileError) -> String {
        guard links != .replace else { return path }
        var current = path
        var hops = 0
        while true {
            var info = stat()
            guard lstat(current, &info) == 0, info.st_mode & S_IFMT == S_IFLNK else { break }
            hops += 1
            var target = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
            let count = readlink(current, &target, target.count - 1)
            guard count > 0 else { throw .cannotCreate(path: path, reason: FileError.reason(errno)) }
            // The kernel's own limit on links in a path: a loop is refused, never replaced.
            guard hops <= 40 else { throw .cannotCreate(path: path, reason: FileError.reason(ELOOP)) }
            let text = String(decoding: target[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
            current = text.hasPrefix("/") ? text : parentDirectory(of: current) + "/" + text
        }
        if case .followWithin(let root) = links, current != path {
            // Compared by real paths: the folder itself may be reached through a link.
            let folder = realPath(root) ?? root
            guard let parent = realPath(parentDirectory(of: current)) else {
                throw .cannotCreate(path: path, reason: "a symbolic link to \(current), whose folder does not exist; it is left as it is")
            }
            guard parent == folder || parent.hasPrefix(folder == "/" ? "/" : folder + "/") else {
                throw .cannotCreate(path: path, reason: "a symbolic link leading out of \(root) (to \(current)), expected a file inside it; it is left as it is")
            }
        }
        return current
    }

    /// `path` with every link and `..` resolved (`realpath`); `nil` when it does not exist.
    public static func realPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    /// What a file of this mode is, for people: "a FIFO", "a symbolic link".
    public static func describeType(_ mode: mode_t) -> String {
        switch mode & S_IFMT {
        case S_IFREG: "a file"
        case S_IFDIR: "a folder"
        case S_IFLNK: "a symbolic link"
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        default: "a file of an unknown type"
        }
    }

    /// Opens `destination` for writing in place when it is a device or a FIFO (`-o /dev/null`,
    /// a pipe made with `mkfifo`): such a file is written to, never replaced. Renaming a new
    /// file over it would have turned `/dev/null` into a plain file for every program on the
    /// machine. A socket cannot be opened, and is refused with the reason. `nil` for anything
    /// else, which is written beside and renamed.
    public static func openSpecialDestination(_ destination: String) throws(FileError) -> Int32? {
        guard isSpecialFile(destination) else { return nil }
        let descriptor = open(destination, O_WRONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw .cannotCreate(path: destination, reason: FileError.reason(errno)) }
        return descriptor
    }

    /// Creates a new empty directory beside `destination`, for staging what will replace it.
    public static func makeTemporaryDirectory(beside destination: String) throws(FileError) -> String {
        var template = temporaryTemplate(beside: destination)
        let created = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard created != nil else { throw .cannotCreate(path: destination, reason: FileError.reason(errno)) }
        return string(fromTemplate: template)
    }

    /// Whether `name` is one of the temporary names above (`.<name>.savetool-XXXXXX`): what a
    /// killed savetool leaves behind, and the next run may remove.
    public static func isTemporaryName(_ name: String) -> Bool {
        name.hasPrefix(".") && name.range(of: #"\.savetool-[A-Za-z0-9]{6}$"#, options: .regularExpression) != nil
    }

    /// A temporary name beside `destination`, as ``makeTemporaryFile(beside:)`` makes them, with
    /// its six characters drawn here: for a name given by a call that creates it exclusively
    /// itself (`linkat`).
    static func temporaryName(beside destination: String) -> String {
        let characters = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789".utf8CString.dropLast())
        var template = temporaryTemplate(beside: destination)
        for index in template.indices.suffix(7).dropLast() { template[index] = characters.randomElement()! }
        return string(fromTemplate: template)
    }

    private static func temporaryTemplate(beside destination: String) -> [CChar] {
        let name = destination.split(separator: "/").last.map(String.init) ?? destination
        return Array("\(parentDirectory(of: destination))/.\(name).savetool-XXXXXX".utf8CString)
    }

    private static func string(fromTemplate template: [CChar]) -> String {
        String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Removes a tree this process made or took over (a staging folder, a destination's old
    /// contents once saved), including folders whose modes shut out their own owner (a bundle's
    /// `0555` or `0000` folder): those are opened to the owner first, as `rm -rf` does not.
    /// Each folder is opened relative to its parent's descriptor and never through a link, so
    /// a folder swapped for a link while the tree is removed leads nowhere outside it (a root
    /// restore must not be steered into `/etc`); names are the bytes the file system holds, and
    /// no path grows past `PATH_MAX`. `nil` when it is gone, else why not.
    @discardableResult
    public static func removeTree(_ path: String) -> String? {
        let parent = open(parentDirectory(of: path), O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard parent >= 0 else { return errno == ENOENT ? nil : "\(parentDirectory(of: path)): \(FileError.reason(errno))" }
        defer { close(parent) }
        let name = Array((path.split(separator: "/").last.map(String.init) ?? path).utf8)
        return removeEntry(name, in: parent, shownAs: path)
    }

    /// Removes `name` in the folder `parent` (a descriptor), a folder with everything in it.
    private static func removeEntry(_ name: [UInt8], in parent: Int32, shownAs shown: String) -> String? {
        let terminated = (name + [0]).map { CChar(bitPattern: $0) }
        func failure() -> String { shown + ": " + FileError.reason(errno) }
        var info = stat()
        guard fstatat(parent, terminated, &info, AT_SYMLINK_NOFOLLOW) == 0 else { return errno == ENOENT ? nil : failure() }
        guard info.st_mode & S_IFMT == S_IFDIR else { return unlinkat(parent, terminated, 0) == 0 || errno == ENOENT ? nil : failure() }
        // Opened to its owner first when its mode shuts them out, and then read: each time through
        // a descriptor that O_NOFOLLOW kept from being a link (fchmodat would follow a link put
        // in its place meanwhile).
        if info.st_mode & S_IRWXU != S_IRWXU {
            #if os(Linux)
            let pathOnly: Int32 = 0o10000000  // O_PATH, which Glibc's module does not export
            let handle = openat(parent, terminated, pathOnly | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
            guard handle >= 0 else { return failure() }
            chmod("/proc/self/fd/\(handle)", (info.st_mode & 0o7777) | S_IRWXU)
            close(handle)
            #else
            fchmodat(parent, terminated, (info.st_mode & 0o7777) | S_IRWXU, AT_SYMLINK_NOFOLLOW)
            #endif
        }
        let folder = openat(parent, terminated, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folder >= 0 else { return failure() }
        guard let stream = fdopendir(folder) else {
            close(folder)
            return failure()
        }
        var problem: String?
        for (child, _) in entries(of: stream) {
            problem = problem ?? removeEntry(child, in: dirfd(stream), shownAs: shown + "/" + String(decoding: child, as: UTF8.self))
        }
        closedir(stream)  // closes `folder` too
        return unlinkat(parent, terminated, AT_REMOVEDIR) == 0 || errno == ENOENT ? nil : problem ?? failure()
    }

    /// Flushes a directory's entries, so that a rename in it survives a power cut.
    public static func syncDirectory(_ directory: String) {
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        fsync(descriptor)
        close(descriptor)
    }

    /// The names in a directory as the bytes the file system holds (`.` and `..` left out), with
    /// the type `readdir` gives: `DT_UNKNOWN` where the file system does not say, so that a
    /// walk needs an `lstat` only for those, not for every file.
    public static func entries(in directory: String) throws(FileError) -> [(bytes: [UInt8], type: UInt8)] {
        try entries(of: opendir(directory), at: directory)
    }

    /// ``entries(in:)`` of a folder whose path ``ExactFileName`` carries.
    public static func entries(inExactPath directory: String) throws(FileError) -> [(bytes: [UInt8], type: UInt8)] {
        try entries(of: ExactFileName.withSystemPath(directory) { opendir($0) }, at: directory)
    }

    /// What an opened directory holds; `stream` is `nil` when `directory` could not be opened.
    private static func entries(of stream: DirectoryStream?, at directory: String) throws(FileError) -> [(bytes: [UInt8], type: UInt8)] {
        guard let stream else { throw .unreadable(path: directory, reason: FileError.reason(errno)) }
        defer { closedir(stream) }
        return entries(of: stream)
    }

    /// What is left to read of an open directory, `.` and `..` left out.
    private static func entries(of stream: DirectoryStream) -> [(bytes: [UInt8], type: UInt8)] {
        var entries: [(bytes: [UInt8], type: UInt8)] = []
        while let entry = readdir(stream) {
            let bytes = withUnsafeBytes(of: entry.pointee.d_name) { raw in Array(raw.prefix { $0 != 0 }) }
            if bytes == [0x2E] || bytes == [0x2E, 0x2E] { continue }
            entries.append((bytes, entry.pointee.d_type))
        }
        return entries
    }

    /// The names in a directory that start with `prefix`, as bytes. Other names are skipped
    /// inside the `readdir` loop, without a copy: every command looks for plugins this way in
    /// each folder of `PATH`, and a folder like /usr/bin holds thousands of names.
    public static func names(in directory: String, startingWith prefix: [UInt8]) throws(FileError) -> [[UInt8]] {
        guard let stream = opendir(directory) else { throw .unreadable(path: directory, reason: FileError.reason(errno)) }
        defer { closedir(stream) }
        var names: [[UInt8]] = []
        while let entry = readdir(stream) {
            withUnsafeBytes(of: entry.pointee.d_name) { raw in
                guard raw.count > prefix.count, memcmp(raw.baseAddress!, prefix, prefix.count) == 0,
                      raw[prefix.count] != 0 else { return }
                names.append(Array(raw.prefix { $0 != 0 }))
            }
        }
        return names
    }

    /// Runs `body` holding an edit lock on the file at `path` (through its links), so that two
    /// savetool edits of one file take turns: each reads what the other wrote, and neither
    /// change is lost. The lock is `flock` on the file itself, taken again when the file was
    /// replaced (renamed over) while it waited: the next edit locks the new file. Waits up to
    /// `wait` seconds, then throws a busy error (exit 75). `-` and a path that does not exist
    /// yet run unlocked.
    public static func withEditLock<T>(_ path: String, wait: Double = 30, _ body: () throws -> T) throws -> T {
        guard path != "-", let destination = try? destination(of: path, links: .follow) else { return try body() }
        let deadline = ContinuousClock.now + .seconds(wait)
        while true {
            let descriptor = open(destination, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
            guard descriptor >= 0 else { return try body() }  // the read reports why
            defer { close(descriptor) }
            var locked = flock(descriptor, LOCK_EX | LOCK_NB) == 0
            // A file system without locks (NFS without lockd, some FUSE mounts): edited as before.
            if !locked, errno != EWOULDBLOCK, errno != EINTR { return try body() }
            while !locked, errno == EWOULDBLOCK || errno == EINTR, ContinuousClock.now < deadline {
                usleep(10_000)
                locked = flock(descriptor, LOCK_EX | LOCK_NB) == 0
            }
            guard locked else {
                throw SaveError(.busy, file: path, "another program holds its edit lock, most likely another savetool editing it (waited \(Int(wait)) s), expected it free; try again")
            }
            // Still the file at that path? An edit that held the lock may have replaced it.
            var held = stat(), current = stat()
            guard fstat(descriptor, &held) == 0, stat(destination, &current) == 0, held.st_dev == current.st_dev, held.st_ino == current.st_ino else {
                continue
            }
            return try body()
        }
    }

    /// The permission bits of a new file: 0666 less the process's umask (as it was first asked).
    public static var newFileMode: mode_t { 0o666 & ~processUmask }

    /// The process's umask, read once.
    public static let processUmask: mode_t = currentUmask()

    /// The process's umask now. On Linux it is read from `/proc/self/status`, since setting it
    /// to read it would change it for a moment for every thread.
    public static func currentUmask() -> mode_t {
        #if os(Linux)
        if let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Umask:") }),
            let mask = mode_t(line.dropFirst("Umask:".count).trimmingCharacters(in: .whitespaces), radix: 8)
        {
            return mask & 0o777
        }
        #endif
        let mask = umask(0o022)
        umask(mask)
        return mask & 0o777
    }

    /// Whether `path` leads to a regular file this process may run (a folder's search bit is
    /// not an executable's).
    public static func isExecutableFile(_ path: String) -> Bool {
        var status = stat()
        return stat(path, &status) == 0 && status.st_mode & S_IFMT == S_IFREG && access(path, X_OK) == 0
    }

    /// The device and inode of what `path` names, following links: two paths with the same
    /// identity are one folder (on a merged-/usr system, `/bin` is `/usr/bin`).
    public static func identity(of path: String) -> (device: UInt64, inode: UInt64)? {
        var status = stat()
        guard stat(path, &status) == 0 else { return nil }
        return (UInt64(status.st_dev), UInt64(status.st_ino))
    }

    /// Refuses an empty path as a usage error. `URL` and the system calls read `""` as the
    /// current folder, and an empty path is most often a shell variable that was never set:
    /// a restore "into" it would replace the folder the user stands in.
    public static func requireNonEmpty(_ path: String, expected: String) throws(SaveError) {
        guard path.isEmpty else { return }
        throw SaveError(.usage, "an empty path, expected \(expected)")
    }

    public static func parentDirectory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}

/// Starts writing a file's data to disk while the file is still being written, a MiB at a
/// time, so that the fsync before its rename has little left to wait for. (On Linux,
/// `POSIX_FADV_DONTNEED` on dirty pages begins their writeback without waiting for it.)
public struct EarlyWriteback: Sendable {
    private var offset: Int64 = 0
    private var unflushedStart: Int64 = 0

    public init() {}

    /// Notes that `count` more bytes were written to `descriptor`.
    public mutating func wrote(_ count: Int, to descriptor: Int32) {
        offset += Int64(count)
        #if os(Linux)
        if offset - unflushedStart >= 1 << 20 {
            _ = posix_fadvise(descriptor, off_t(unflushedStart), off_t(offset - unflushedStart), POSIX_FADV_DONTNEED)
            unflushedStart = offset
        }
        #endif
    }
}
