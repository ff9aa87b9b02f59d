"""The Transformer family page's members, one view each (mlm, gpt, vit, detr): pages/family.py draws the member
the learner picks by calling its render(). Not pages of their own: app/pages_list.py lists the app's pages, and
what the members share (the model picker, cached loading) is in pages/views/family.py."""
