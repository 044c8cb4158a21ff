// libzstd, as the SaveArchive module sees it: its own API, for the multithreaded compression
// that libarchive's zstd filter does not offer (see ZstdCompressor.swift).
#include <zstd.h>
