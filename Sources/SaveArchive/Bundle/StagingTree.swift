import CSaveToolSystem
import Foundation
import OrderedCollections
import SaveKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The staging directory of an import, written through directory descriptors (`openat`,
/// `mkdirat`, `symlinkat`, `linkat`): a path that fits the destination fits here, however long
/// the staging directory's own path, and no component is ever followed through a link.
final class StagingTree {
    let root: String
    private let rootDescriptor: Int32
    /// The last parent directory opened: entries come sorted, so most share it.
    private var cached: (path: String, descriptor: Int32)?
    /// The umask when the import began.
    let umask: mode_t
    /// Whether a new file here has the mode asked for less the umask, and this process's user
    /// and group as its owner. Then a file created with its mode needs no `fchmod`, and one
    /// whose owner is this process no `fchown` (two system calls of six per file). Not so
    /// beside a setgid folder or on a file system mounted with `grpid` (the folder's group is
    /// handed down), under a default ACL (it replaces the umask), or where the file system
    /// chooses modes or owners itself (NFS's root squashing, FUSE and SMB mounts, other ACLs):
    /// a file made here at the start, and removed at once, tells.
    let createsAsAsked: Bool

    init(root: String) throws {
        self.root = root
        rootDescriptor = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW)
        guard rootDescriptor >= 0 else { throw BundleImportError.io(path: root, reason: FileError.reason(errno)) }
        umask = FileIO.currentUmask()
        // A umask that takes the owner's bits (277) makes folders their owner cannot fill:
        // the staging folders are given 0700 again (their own modes come last).
        if umask & 0o700 != 0, fchmod(rootDescriptor, 0o700) != 0 {
            close(rootDescriptor)
            throw BundleImportError.io(path: root, reason: FileError.reason(errno))
        }
        let noDefaultACL = savetool_get_xattr(rootDescriptor, nil, "system.posix_acl_default", nil, 0) < 0 && (errno == ENODATA || errno == ENOTSUP)
        do {
            createsAsAsked = try noDefaultACL && Self.probeCreatesAsAsked(in: rootDescriptor, root: root, umask: umask)
        } catch {
            close(rootDescriptor)  // deinit does not run for an object that never was
            throw error
        }
    }

    /// Whether a file created in `directory` has the mode asked for (less `umask`) and this
    /// process's owner; the file is removed again. Entries land only after, so its name is free.
    private static func probeCreatesAsAsked(in directory: Int32, root: String, umask: mode_t) throws -> Bool {
        let name = ".savetool-probe", asked: mode_t = (0o754 & ~umask) | 0o200
        let descriptor = openat(directory, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, asked)
        guard descriptor >= 0 else { return false }
        var status = stat()
        let made = fstat(descriptor, &status) == 0
        close(descriptor)
        // Left there, it would be restored with the bundle's files.
        guard unlinkat(directory, name, 0) == 0 else { throw BundleImportError.io(path: root + "/" + name, reason: FileError.reason(errno)) }
        return made && status.st_mode & 0o7777 == asked && status.st_uid == geteuid() && status.st_gid == getegid()
    }

    /// How a file is created here, and what is left to do once it is written.
    struct FileCreation {
        /// The bits to create it with: its own, and its owner's write bit (a file system that
        /// opens a new file after making it checks the mode it was made with).
        var permissions: mode_t
        /// Whether the umask takes that write bit away.
        var writeBitMasked: Bool
        /// Whether `fchmod` must give the file its mode once it is written.
        var needsMode: Bool
        /// Whether it is made with this process's owner (``StagingTree/createsAsAsked``).
        var ownedByCreator: Bool

        /// A dry run creates nothing; its plan is the one that assumes least.
        static let dryRun = FileCreation(permissions: 0o600, writeBitMasked: false, needsMode: true, ownedByCreator: false)
    }

    /// How to create a file of `mode`.
    func creation(of mode: mode_t) -> FileCreation {
        FileCreation(
            permissions: mode & 0o777 | 0o200, writeBitMasked: umask & 0o200 != 0,
            needsMode: !createsAsAsked || mode & 0o7000 != 0 || mode & 0o200 == 0 || mode & umask != 0,
            ownedByCreator: createsAsAsked)
    }

    deinit {
        if let cached { close(cached.descriptor) }
        close(rootDescriptor)
    }

    /// The descriptor of `relative`'s parent directory (made, 0700, where missing) and its last name.
    func parent(of relative: String) throws -> (descriptor: Int32, name: String) {
        // Paths here are checked manifest paths (no empty, `.` or `..` components), so the last
        // slash separates the parent; the components are only split out when a folder is new.
        guard let slash = relative.utf8.lastIndex(of: UInt8(ascii: "/")) else { return (rootDescriptor, relative) }
        let name = String(relative[relative.utf8.index(after: slash)...])
        // Most files share the folder of the one before: compared as bytes, with no string made.
        if let cached, PathBytes.folder(of: relative, is: cached.path) == true { return (cached.descriptor, name) }
        let parentPath = String(relative[..<slash])
        var descriptor = rootDescriptor
        for component in parentPath.split(separator: "/", omittingEmptySubsequences: false).map(String.init) {
            // Never out of the tree, whatever a caller passes: a `..` would climb, and folders
            // would be made outside it (a hard link's target is checked no sooner than its entry).
            guard !component.isEmpty, component != ".", component != ".." else {
                if descriptor != rootDescriptor { close(descriptor) }
                throw BundleImportError.io(path: root + "/" + relative, reason: "a path with an empty, '.' or '..' component, expected one inside the folder")
            }
            let next: Int32
            do {
                try makeFolder(component, in: descriptor, for: relative)
                next = ExactFileName.withSystemPath(component) { openat(descriptor, $0, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) }
            } catch {
                if descriptor != rootDescriptor { close(descriptor) }
                throw error
            }
            let failure = errno
            if descriptor != rootDescriptor { close(descriptor) }
            guard next >= 0 else { throw BundleImportError.io(path: root + "/" + relative, reason: FileError.reason(failure)) }
            descriptor = next
        }
        if let cached { close(cached.descriptor) }
        cached = (parentPath, descriptor)
        return (descriptor, name)
    }

    /// A new file, open for writing, created with `mode` (less the umask): inside the staging
    /// directory, which only its owner may enter, no one else can open it meanwhile.
    func createFile(_ relative: String, mode: mode_t = 0o600) throws -> Int32 {
        let (parent, name) = try parent(of: relative)
        let descriptor = ExactFileName.withSystemPath(name) { openat(parent, $0, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode) }
        guard descriptor >= 0 else { throw BundleImportError.io(path: root + "/" + relative, reason: FileError.reason(errno)) }
        return descriptor
    }

    /// A directory, writable until ``finish(_:)`` gives it its own mode.
    func makeDirectory(_ relative: String) throws {
        let (parent, name) = try parent(of: relative)
        try makeFolder(name, in: parent, for: relative)
    }

    /// Makes folder `name` in `directory` (0700) unless it is there; a umask that takes the
    /// owner's bits (277) would leave a folder its owner cannot fill, so it is given 0700 again
    /// (its own mode comes last). Errors name `relative`, the entry being staged.
    private func makeFolder(_ name: String, in directory: Int32, for relative: String) throws {
        let made = ExactFileName.withSystemPath(name, { mkdirat(directory, $0, 0o700) }) == 0
        guard made || errno == EEXIST else {
            throw BundleImportError.io(path: root + "/" + relative, reason: FileError.reason(errno))
        }
        if made && umask & 0o700 != 0 && ExactFileName.withSystemPath(name, { fchmodat(directory, $0, 0o700, 0) }) != 0 {
            throw BundleImportError.io(path: root + "/" + relative, reason: FileError.reason(errno))
        }
    }

    func makeSymbolicLink(_ relative: String, to target: String) throws {
        let (parent, name) = try parent(of: relative)
        let made = ExactFileName.withSystemPath(target) { target in ExactFileName.withSystemPath(name) { symlinkat(target, parent, $0) } }
        guard made == 0 else { throw BundleImportError.io(path: root + "/" + relative, reason: FileError.reason(errno)) }
    }

    /// A second name for the file already staged at `target`.
    func makeHardLink(_ relative: String, to target: String) throws {
        let (targetParent, targetName) = try parent(of: target)
        // Its own copy: looking up the new name's parent may close the cached descriptor.
        let targetDirectory = dup(targetParent)
        guard targetDirectory >= 0 else { throw BundleImportError.io(path: root + "/" + target, reason: FileError.reason(errno)) }
        defer { close(targetDirectory) }
        // A second name for a file only: linkat does not follow a link, and a second name for a
        // symbolic link would lead from another folder (the manifest's second reading, which
        // says so, may end after this entry lands).
        var targetInfo = stat()
        guard ExactFileName.withSystemPath(targetName, { fstatat(targetDirectory, $0, &targetInfo, AT_SYMLINK_NOFOLLOW) }) == 0,
            targetInfo.st_mode & S_IFMT == S_IFREG
        else {
            throw BundleImportError.io(path: root + "/" + relative, reason: "a hard link to \(ExactFileName.printable(target)), which is not a file staged before it")
        }
        let (parent, name) = try parent(of: relative)
        let made = ExactFileName.withSystemPath(targetName) { targetName in ExactFileName.withSystemPath(name) { linkat(targetDirectory, targetName, parent, $0, 0) } }
        guard made == 0 else {
            throw BundleImportError.io(path: root + "/" + relative, reason: FileError.reason(errno))
        }
    }

    /// Sets what a non-file entry keeps (mode, time, owner), not following a link.
    func setAttributes(of relative: String, mode: UInt16?, time: Timestamp, owner: (uid: UInt32, gid: UInt32)?) throws {
        let (parent, name) = try parent(of: relative)
        if let owner, ExactFileName.withSystemPath(name, { fchownat(parent, $0, owner.uid, owner.gid, AT_SYMLINK_NOFOLLOW) }) != 0 {
            throw BundleImportError.io(path: root + "/" + relative, reason: "cannot set its owner: \(FileError.reason(errno))")
        }
        if let mode, ExactFileName.withSystemPath(name, { fchmodat(parent, $0, mode_t(mode), 0) }) != 0 {
            throw BundleImportError.io(path: root + "/" + relative, reason: FileError.reason(errno))
        }
        var times = [time.timespec, time.timespec]
        guard ExactFileName.withSystemPath(name, { utimensat(parent, $0, &times, AT_SYMLINK_NOFOLLOW) }) == 0 else {
            throw BundleImportError.io(path: root + "/" + relative, reason: FileError.reason(errno))
        }
    }

    /// Sets extended attributes on a staged directory (files take theirs on their descriptor).
    func setExtendedAttributes(of relative: String, _ xattrs: OrderedDictionary<String, [UInt8]>) -> [String] {
        guard !xattrs.isEmpty, let (parent, name) = try? parent(of: relative) else { return [] }
        let descriptor = ExactFileName.withSystemPath(name) { openat(parent, $0, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW) }
        guard descriptor >= 0 else { return Array(xattrs.keys) }
        defer { close(descriptor) }
        return Self.setExtendedAttributes(xattrs, on: descriptor)
    }

    /// The names that could not be set.
    static func setExtendedAttributes(_ xattrs: OrderedDictionary<String, [UInt8]>, on descriptor: Int32) -> [String] {
        xattrs.compactMap { name, value in
            value.withUnsafeBytes { savetool_set_xattr(descriptor, nil, name, $0.baseAddress, UInt($0.count)) } == 0 ? nil : name
        }
    }
}
