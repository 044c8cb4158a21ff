import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A port on 127.0.0.1 that takes connections (the kernel's backlog) and never answers: a
/// stopped or hung server, as clients see it.
public final class SilentListener {
    public let port: Int
    private let socket: Int32

    public init() throws {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) } }
        guard bound == 0, listen(socket, 16) == 0,
            withUnsafeMutablePointer(to: &address, { $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(socket, $0, &length) } }) == 0
        else {
            Glibc.close(socket)
            throw MotoServer.ServerError("cannot listen on 127.0.0.1")
        }
        (self.socket, port) = (socket, Int(UInt16(bigEndian: address.sin_port)))
    }

    public func close() { Glibc.close(socket) }
}
