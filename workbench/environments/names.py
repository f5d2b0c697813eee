"""The one home of the name tables a skill environment is inferred with.

`distribution_of(module)` maps a Python import name to the PyPI distribution that provides it
(`yaml` to PyYAML, `docx` to python-docx, `PIL` to pillow, ...; a name the table does not know
is taken as its own distribution, which holds for most packages). `DEBIAN_PACKAGES` names the
Debian package that provides a command a script runs (`pdftotext` is in poppler-utils), and
`LIBRARY_PACKAGES` the Debian packages a distribution calls at run time (pdf2image runs
poppler's `pdftoppm`). Plain data: nothing here reads a skill or runs anything.
"""

import re

IMPORT_DISTRIBUTIONS: dict[str, str] = {
    "yaml": "PyYAML",
    "docx": "python-docx",
    "pptx": "python-pptx",
    "PIL": "pillow",
    "fitz": "PyMuPDF",
    "pymupdf": "PyMuPDF",
    "cv2": "opencv-python",
    "bs4": "beautifulsoup4",
    "sklearn": "scikit-learn",
    "skimage": "scikit-image",
    "dateutil": "python-dateutil",
    "dotenv": "python-dotenv",
    "jwt": "PyJWT",
    "Crypto": "pycryptodome",
    "OpenSSL": "pyOpenSSL",
    "magic": "python-magic",
    "git": "GitPython",
    "serial": "pyserial",
    "attr": "attrs",
    "google.protobuf": "protobuf",
    "google.genai": "google-genai",
    "pdfminer": "pdfminer.six",
    "pkg_resources": "setuptools",
    "zmq": "pyzmq",
    "psycopg2": "psycopg2-binary",
    "MySQLdb": "mysqlclient",
    "slugify": "python-slugify",
    "multipart": "python-multipart",
    "socks": "PySocks",
    "odf": "odfpy",
    "Levenshtein": "levenshtein",
    "imageio_ffmpeg": "imageio-ffmpeg",
    "markdown": "Markdown",
    "jinja2": "Jinja2",
    "ruamel": "ruamel.yaml",
    "win32api": "pywin32",
    "win32com": "pywin32",
    "mpl_toolkits": "matplotlib",
    "speech_recognition": "SpeechRecognition",
    "Bio": "biopython",
    "usb": "pyusb",
}

DEBIAN_PACKAGES: dict[str, str] = {
    **dict.fromkeys(("pdftotext", "pdftoppm", "pdfinfo", "pdfimages", "pdftocairo",
                     "pdfseparate", "pdfunite", "pdffonts"), "poppler-utils"),
    **dict.fromkeys(("soffice", "libreoffice", "lowriter", "localc", "loimpress"),
                    "libreoffice-nogui"),
    **dict.fromkeys(("convert", "magick", "identify", "mogrify", "montage", "composite"),
                    "imagemagick"),
    **dict.fromkeys(("ffmpeg", "ffprobe"), "ffmpeg"),
    **dict.fromkeys(("gs", "ps2pdf"), "ghostscript"),
    **dict.fromkeys(("pdflatex", "latex", "xelatex"), "texlive-latex-base"),
    **dict.fromkeys(("gcc", "cc"), "gcc"),
    **dict.fromkeys(("npm", "npx"), "npm"),
    **dict.fromkeys(("java",), "default-jre-headless"),
    **dict.fromkeys(("rsvg-convert",), "librsvg2-bin"),
    **dict.fromkeys(("xmllint",), "libxml2-utils"),
    **dict.fromkeys(("tesseract",), "tesseract-ocr"),
    **dict.fromkeys(("qpdf",), "qpdf"),
    **dict.fromkeys(("pandoc",), "pandoc"),
    **dict.fromkeys(("inkscape",), "inkscape"),
    **dict.fromkeys(("git",), "git"),
    **dict.fromkeys(("curl",), "curl"),
    **dict.fromkeys(("wget",), "wget"),
    **dict.fromkeys(("sqlite3",), "sqlite3"),
    **dict.fromkeys(("make",), "make"),
    **dict.fromkeys(("python",), "python-is-python3"),
    **dict.fromkeys(("patch",), "patch"),
    **dict.fromkeys(("less",), "less"),
    **dict.fromkeys(("rsync",), "rsync"),
    **dict.fromkeys(("lsof",), "lsof"),
    **dict.fromkeys(("exiftool",), "libimage-exiftool-perl"),
    **dict.fromkeys(("dot",), "graphviz"),
}  # fmt: skip

LIBRARY_PACKAGES: dict[str, tuple[str, ...]] = {
    "pdf2image": ("poppler-utils",),
    "pytesseract": ("tesseract-ocr",),
    "pydub": ("ffmpeg",),
    "docx2pdf": ("libreoffice-nogui",),
}


def distribution_of(module: str) -> str:
    """The PyPI distribution that provides the dotted `module` (see the module docstring)."""
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        if (known := IMPORT_DISTRIBUTIONS.get(".".join(parts[:end]))) is not None:
            return known
    return parts[0]


def canonical(name: str) -> str:
    """A distribution name as PyPI compares them (PEP 503): `PyYAML` and `pyyaml` are one."""
    return re.sub(r"[-_.]+", "-", name).lower()
