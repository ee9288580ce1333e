"""Media: discovering, checking and importing images, videos and frame folders as items."""

from truthline.media._import import (
    IMAGE_EXTS,
    VIDEO_EXTS,
    ImportReport,
    check_image,
    check_video,
    file_hash,
    import_items,
)

__all__ = [
    "IMAGE_EXTS",
    "VIDEO_EXTS",
    "ImportReport",
    "check_image",
    "check_video",
    "file_hash",
    "import_items",
]
