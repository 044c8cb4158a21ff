import Foundation
import SaveKit

/// Credentials, region and endpoint from the standard environment, as restic and the AWS tools
/// read them: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`, `AWS_SESSION_TOKEN`, `AWS_REGION`
/// (else `AWS_DEFAULT_REGION`, else `us-east-1`) and `AWS_ENDPOINT_URL` (else AWS's own).
public struct AWSEnvironment: Sendable {
    public var accessKey: String
    public var secretKey: String
    public var sessionToken: String?
    public var region: String
    /// Scheme, host and port; requests use path-style addressing (`/bucket/key`), which every
    /// S3-compatible server understands.
    public var endpoint: URL

    public init(accessKey: String, secretKey: String, sessionToken: String? = nil, region: String = "us-east-1", endpoint: URL) {
        (self.accessKey, self.secretKey, self.sessionToken, self.region, self.endpoint) = (accessKey, secretKey, sessionToken, region, endpoint)
    }

    public static func current(_ environment: [String: String] = ProcessInfo.processInfo.environment) throws -> AWSEnvironment {
        func value(_ name: String) -> String? { environment[name].flatMap { $0.isEmpty ? nil : $0 } }
        guard let accessKey = value("AWS_ACCESS_KEY_ID"), let secretKey = value("AWS_SECRET_ACCESS_KEY") else {
            throw SaveError(.permissionDenied, "no credentials for the object store: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set")
        }
        let region = value("AWS_REGION") ?? value("AWS_DEFAULT_REGION") ?? "us-east-1"
        let endpointText = value("AWS_ENDPOINT_URL") ?? "https://s3.\(region).amazonaws.com"
        guard let endpoint = URL(string: endpointText), let scheme = endpoint.scheme, ["http", "https"].contains(scheme), endpoint.host != nil else {
            throw SaveError(.usage, "AWS_ENDPOINT_URL is \"\(endpointText)\", expected http:// or https:// and a host")
        }
        return AWSEnvironment(accessKey: accessKey, secretKey: secretKey, sessionToken: value("AWS_SESSION_TOKEN"), region: region, endpoint: endpoint)
    }
}
