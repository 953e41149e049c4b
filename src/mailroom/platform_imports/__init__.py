"""Imports from other email platforms (Mailchimp, listmonk, Brevo, Kit, Mautic).

This package is the pure format layer: `formats.read_export` reads one platform's export file
(a CSV, or a `.zip` opened safely by `archive.read_zip`) into the normalised records of
`records` (`PlatformExport` of `PlatformContact`s, with the custom fields' inferred types, the
list names, the rows that cannot be used and warnings). No database, no HTTP: the job that
writes the records (through the CSV importer's writes), the API and the dashboard build on it.
"""
