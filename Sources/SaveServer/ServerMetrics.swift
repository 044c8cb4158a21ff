import Foundation
import Prometheus
import SaveSync

/// What `/metrics` shows, in Prometheus's text format: requests by status, pushes by outcome,
/// bytes in and out, and a histogram of push latency.
final class ServerMetrics: Sendable {
    private let registry = PrometheusCollectorRegistry()
    private let fastForwards, merges, conflicts, firsts, others: Counter
    private let bytesIn, bytesOut: Counter
    private let latency: DurationHistogram
    private let statusCounters = StatusCounters()

    private static func name(_ metric: String, _ unit: String, _ help: String) -> MetricNameDescriptor {
        MetricNameDescriptor(namespace: "savetool", metricName: metric, unitName: unit, helpText: help)
    }

    init() {
        let registry = self.registry
        func pushes(_ outcome: String) -> Counter {
            registry.makeCounter(descriptor: Self.name("pushes", "total", "Pushes stored or parked, by outcome."), labels: [("outcome", outcome)])
        }
        (fastForwards, merges, conflicts, firsts, others) = (pushes("fast_forward"), pushes("merged"), pushes("conflict"), pushes("first"), pushes("other"))
        bytesIn = registry.makeCounter(descriptor: Self.name("received_bytes", "total", "Bytes of request bodies."))
        bytesOut = registry.makeCounter(descriptor: Self.name("sent_bytes", "total", "Bytes of response bodies."))
        latency = registry.makeDurationHistogram(
            descriptor: Self.name("push_duration", "seconds", "Time from a push's body read to its answer, storage and merge included."),
            buckets: [.milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50), .milliseconds(100), .milliseconds(250), .seconds(1), .seconds(5)])
    }

    func pushed(_ outcome: PushService.Outcome, bytes: Int, took: Duration) {
        switch outcome {
        case .stored(let record, _):
            switch record.how {
            case .fastForward: fastForwards.increment()
            case .merged, .mergedWithoutBase: merges.increment()
            case .first: firsts.increment()
            default: others.increment()
            }
        case .alreadyHead: others.increment()
        case .conflict: conflicts.increment()
        }
        latency.record(took)
    }

    func request(status: Int, bytesIn received: Int, bytesOut sent: Int) {
        statusCounters.counter(for: status) {
            registry.makeCounter(descriptor: Self.name("requests", "total", "Requests answered, by status."), labels: [("status", String(status))])
        }.increment()
        if received > 0 { bytesIn.increment(by: Int64(received)) }
        if sent > 0 { bytesOut.increment(by: Int64(sent)) }
    }

    func text() -> [UInt8] { registry.emitToBuffer() }
}

/// The request counter of each status, made once: asking the registry for it on every request
/// (a descriptor built, a lookup under the registry's lock) was a tenth of a request's time on
/// the event loop's side in a profile of one device (docs/performance.md).
private final class StatusCounters: @unchecked Sendable {
    private let lock = NSLock()
    private var counters: [Int: Counter] = [:]

    func counter(for status: Int, making make: () -> Counter) -> Counter {
        lock.withLock {
            if let counter = counters[status] { return counter }
            let counter = make()
            counters[status] = counter
            return counter
        }
    }
}
