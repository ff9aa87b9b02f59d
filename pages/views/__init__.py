"""Page-side helpers: what a page shows that is more than a catalogue lookup (token labels, table rows, formulas
written out, a background study's state), shared by one or more pages. Not pages of their own (app/pages_list.py
lists those); no computation either: numbers come from model/, figures from app/charts/."""
