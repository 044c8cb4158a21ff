import Testing

@testable import SaveServer

/// The access log's names of a request: its space and slot as far as they are names, printable
/// ASCII only (one `?` for each other character), so that no request can forge a line.
@Suite("the access log")
struct AccessLogTests {
    @Test func aPathGivesItsSpaceAndSlot() {
        #expect(AccessLogMiddleware.names(in: "/v1/spaces/kape/player-1/slots/Documents/current_tournament.json") == ("kape/player-1", "Documents/current_tournament.json"))
        #expect(AccessLogMiddleware.names(in: "/v1/spaces/kape/slots") == ("kape", "-"))
        #expect(AccessLogMiddleware.names(in: "/v1/spaces/kape/slots//a") == ("kape", "a"))
        #expect(AccessLogMiddleware.names(in: "/v1/spaces/kape") == ("kape", "-"))
        #expect(AccessLogMiddleware.names(in: "/metrics") == ("/metrics", "-"))
        // The first segment `slots` ends the space, as the routes read it.
        #expect(AccessLogMiddleware.names(in: "/v1/spaces/a/slotsb/slots/c") == ("a/slotsb", "c"))
        #expect(AccessLogMiddleware.names(in: "/v1/spaces/slots/slots/slots") == ("slots", "slots"))
        #expect(AccessLogMiddleware.names(in: "/v1/spaces/a/slots\u{301}/b") == ("a/slots?/b", "-"))
    }

    @Test func onlyPrintableASCIIReachesTheLog() {
        #expect(AccessLogMiddleware.names(in: "/v1/spaces/k\u{E9}pe\n/slots/a b\u{1B}[31m") == ("k?pe?", "a?b?[31m"))
        #expect(AccessLogMiddleware.printable("\"12\"", dropping: "\"") == "12")
        #expect(AccessLogMiddleware.printable("e\u{301}\t\u{1F600}") == "e???")
        #expect(AccessLogMiddleware.names(in: "/v1/spaces/" + String(repeating: "x", count: 500) + "/slots/s").0.count == 200)
    }
}
