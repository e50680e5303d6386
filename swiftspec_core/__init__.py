"""SwiftSpec engine: one model stack, a tree-aware KV cache, token trees and the decoders."""
