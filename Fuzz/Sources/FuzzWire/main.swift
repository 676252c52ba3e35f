import FuzzDriver
import HubValue
import HubWire

// The wire decoders on any bytes: a message or a WireError, never a crash.
runFuzzer { bytes in
    _ = try? ClientMessage.decode(bytes)
    _ = try? ServerMessage.decode(bytes)
}
