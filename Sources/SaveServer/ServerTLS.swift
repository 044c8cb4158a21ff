import Foundation
import NIOSSL
import SaveKit

/// TLS in the server itself (`--tls-cert`, `--tls-key`): a PEM certificate chain, leaf first,
/// and the leaf's private key. Without it the server speaks plain HTTP, for a terminating proxy
/// in front of it or for a loopback address.
public struct ServerTLS: Sendable {
    public var certificateChain: String
    public var privateKey: String

    public init(certificateChain: String, privateKey: String) {
        (self.certificateChain, self.privateKey) = (certificateChain, privateKey)
    }

    /// The files read and checked together, before anything listens: a certificate that cannot
    /// be read, a key that cannot, or a key that is not the certificate's is refused here with
    /// the file it is about, not at a device's first handshake.
    func configuration() throws -> TLSConfiguration {
        for path in [certificateChain, privateKey] where !FileManager.default.isReadableFile(atPath: path) {
            throw SaveError(.notFound, file: path, "cannot be read, expected a PEM file")
        }
        let chain: [NIOSSLCertificate]
        do {
            chain = try NIOSSLCertificate.fromPEMFile(certificateChain)
        } catch {
            throw SaveError(.badData, file: certificateChain, "not a PEM certificate (\(error)), expected -----BEGIN CERTIFICATE-----")
        }
        guard !chain.isEmpty else {
            throw SaveError(.badData, file: certificateChain, "no certificate in it, expected -----BEGIN CERTIFICATE-----")
        }
        let key: NIOSSLPrivateKey
        do {
            key = try NIOSSLPrivateKey(file: privateKey, format: .pem)
        } catch {
            throw SaveError(.badData, file: privateKey, "not a PEM private key (\(error)), expected -----BEGIN PRIVATE KEY-----")
        }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        configuration.minimumTLSVersion = .tlsv12
        do {
            _ = try NIOSSLContext(configuration: configuration)
        } catch {
            throw SaveError(.badData, file: privateKey, "not the key of the certificate in \(certificateChain) (\(error)), expected the key it was issued for")
        }
        return configuration
    }
}
