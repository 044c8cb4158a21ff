// libarchive, as the SaveArchive module sees it.
#include <archive.h>
#include <archive_entry.h>
#include <locale.h>
