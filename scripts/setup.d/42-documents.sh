# Documents (issue 17): the PDF-to-Markdown converter's tests read a real manual as well as PDFs
# they generate: GNU Libtasn1's, a Texinfo PDF with headings, lists and code (libtasn1-doc, 0.6 MB).
if ! dpkg -s libtasn1-doc >/dev/null 2>&1; then
  sudo_cmd=""; [ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends libtasn1-doc >/dev/null
else
  echo "reused: libtasn1-doc is installed"
fi
