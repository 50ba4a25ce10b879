"""Stand-in for tensorboardX on the GPU recording machine: see scripts/stand_ins/README.md."""

import torch


def make_np(x):
    if isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    import numpy as np

    return np.asarray(x)


class SummaryWriter:
    def __init__(self, *args, **kwargs):
        pass

    def add_scalar(self, tag, scalar_value, global_step=None, *args, **kwargs):
        make_np(scalar_value)

    def add_scalars(self, main_tag, tag_scalar_dict, global_step=None, *args, **kwargs):
        for value in tag_scalar_dict.values():
            make_np(value)

    def add_histogram(self, tag, values, global_step=None, *args, **kwargs):
        make_np(values)

    def add_image(self, tag, img_tensor, global_step=None, *args, **kwargs):
        make_np(img_tensor)

    add_images = add_image

    def add_audio(self, tag, snd_tensor, global_step=None, *args, **kwargs):
        make_np(snd_tensor)

    def add_video(self, tag, vid_tensor, global_step=None, *args, **kwargs):
        make_np(vid_tensor)

    def add_embedding(self, mat, *args, **kwargs):
        make_np(mat)

    def add_pr_curve(self, tag, labels, predictions, global_step=None, *args, **kwargs):
        make_np(labels)
        make_np(predictions)

    def flush(self):
        pass

    def close(self):
        pass
